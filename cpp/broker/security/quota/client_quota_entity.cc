#include "broker/security/quota/client_quota_entity.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace headrace::broker::quota {
namespace {

constexpr std::string_view kUsers = "users/";
constexpr std::string_view kClients = "clients/";
constexpr std::string_view kUserClients = "/clients/";

std::string PartPath(const EntityPart& p) {
  return p.kind == EntityPart::Kind::kDefault ? kDefaultName : SanitizeName(p.name);
}

Result<EntityPart> PartFromPath(std::string_view s) {
  if (s == kDefaultName) return EntityPart::Default();
  if (s.empty() || s.find('/') != std::string_view::npos) {
    return Status::InvalidArgument("bad quota entity name '" + std::string(s) + "'");
  }
  HR_ASSIGN_OR_RETURN(std::string name, DesanitizeName(s));
  return EntityPart::Name(std::move(name));
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string SanitizeName(std::string_view name) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : name) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
        c == '-' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Result<std::string> DesanitizeName(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    int hi = i + 1 < s.size() ? HexDigit(s[i + 1]) : -1;
    int lo = i + 2 < s.size() ? HexDigit(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return Status::InvalidArgument("bad escape in quota entity name '" + std::string(s) + "'");
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string ClientQuotaEntity::Path() const {
  if (!user.present()) return std::string(kClients) + PartPath(client_id);
  std::string out = std::string(kUsers) + PartPath(user);
  if (client_id.present()) out += std::string(kUserClients) + PartPath(client_id);
  return out;
}

Result<ClientQuotaEntity> ClientQuotaEntity::FromPath(std::string_view path) {
  ClientQuotaEntity e;
  if (path.starts_with(kClients)) {
    HR_ASSIGN_OR_RETURN(e.client_id, PartFromPath(path.substr(kClients.size())));
    return e;
  }
  if (!path.starts_with(kUsers)) {
    return Status::InvalidArgument("not a quota entity path: '" + std::string(path) + "'");
  }
  std::string_view rest = path.substr(kUsers.size());
  size_t sep = rest.find(kUserClients);
  HR_ASSIGN_OR_RETURN(e.user, PartFromPath(rest.substr(0, sep)));
  if (sep != std::string_view::npos) {
    HR_ASSIGN_OR_RETURN(e.client_id, PartFromPath(rest.substr(sep + kUserClients.size())));
  }
  return e;
}

std::string FormatQuotaValue(const std::string& key, double value) {
  char buf[64];
  if (key != kRequestPercentage && std::nearbyint(value) == value && std::fabs(value) < 9.2e18) {
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(value));
    return buf;
  }
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  std::string out(buf, p);
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

Result<double> ParseQuotaValue(std::string_view text) {
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v)) {
    return Status::InvalidArgument("bad quota value '" + std::string(text) + "'");
  }
  return v;
}

}  // namespace headrace::broker::quota
