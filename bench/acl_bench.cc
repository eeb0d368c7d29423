// Authorizer micro-benchmarks: what one ACL check costs a request (every
// handler makes one per resource; docs/performance.md "ACL checks").
//   Acl/disabled                     authorizer.class.name unset: the branch
//   Acl/super_user                   a principal in super.users
//   Acl/literal_allow/acls:N         an ALLOW on the topic's literal name,
//                                    N ACLs in force on other topics
//   Acl/prefixed_allow/prefixes:N    the match comes from one of N prefixed
//                                    patterns of distinct lengths
//   Acl/denied/acls:N                no ACL applies (the common refusal)
//   Acl/threads                      literal_allow from 4 threads at once
//                                    (the shared snapshot's refcount)
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "broker/security/auth/authorizer.h"

namespace headrace {
namespace {

using broker::auth::AclBinding;
using broker::auth::AclOperation;
using broker::auth::AclPermission;
using broker::auth::AclSnapshot;
using broker::auth::Authorizer;
using broker::auth::AuthorizerConfig;
using broker::auth::PatternType;
using broker::auth::ResourceType;

constexpr const char* kPrincipal = "User:ANONYMOUS";
constexpr const char* kHost = "10.0.0.7";

std::unique_ptr<Authorizer> MakeAuthorizer(std::vector<AclBinding> acls) {
  AuthorizerConfig c;
  c.class_name = broker::auth::kAuthorizerName;
  c.super_users = {"User:admin", "User:broker"};
  auto a = std::make_unique<Authorizer>(c);
  a->Publish(std::make_shared<const AclSnapshot>(std::move(acls)));
  return a;
}

std::vector<AclBinding> OtherTopics(int n) {
  std::vector<AclBinding> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({ResourceType::kTopic, "other-" + std::to_string(i), PatternType::kLiteral,
                   "User:app-" + std::to_string(i % 17), "*", AclOperation::kWrite,
                   AclPermission::kAllow});
  }
  return out;
}

void Disabled(benchmark::State& state) {
  Authorizer a{AuthorizerConfig{}};
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        a.Authorize(kPrincipal, kHost, AclOperation::kWrite, ResourceType::kTopic, "orders"));
  }
}
BENCHMARK(Disabled)->Name("Acl/disabled");

void SuperUser(benchmark::State& state) {
  auto a = MakeAuthorizer(OtherTopics(1000));
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        a->Authorize("User:broker", kHost, AclOperation::kWrite, ResourceType::kTopic, "orders"));
  }
}
BENCHMARK(SuperUser)->Name("Acl/super_user");

void LiteralAllow(benchmark::State& state) {
  std::vector<AclBinding> acls = OtherTopics(static_cast<int>(state.range(0)));
  acls.push_back({ResourceType::kTopic, "orders", PatternType::kLiteral, kPrincipal, "*",
                  AclOperation::kWrite, AclPermission::kAllow});
  auto a = MakeAuthorizer(std::move(acls));
  for (auto _ : state) {
    bool ok = a->Authorize(kPrincipal, kHost, AclOperation::kWrite, ResourceType::kTopic, "orders");
    if (!ok) state.SkipWithError("expected allowed");
    benchmark::DoNotOptimize(ok);
  }
}
BENCHMARK(LiteralAllow)->Name("Acl/literal_allow")->ArgName("acls")->Arg(0)->Arg(1000)->Arg(100000);

void PrefixedAllow(benchmark::State& state) {
  std::vector<AclBinding> acls;
  const int n = static_cast<int>(state.range(0));
  for (int i = 1; i <= n; ++i) {  // prefixes "o", "or", ... of distinct lengths
    std::string prefix = std::string("orders.eu.west.billing.events").substr(0, i);
    acls.push_back({ResourceType::kTopic, prefix, PatternType::kPrefixed,
                    i == n ? kPrincipal : "User:someone-else", "*", AclOperation::kRead,
                    AclPermission::kAllow});
  }
  auto a = MakeAuthorizer(std::move(acls));
  for (auto _ : state) {
    bool ok = a->Authorize(kPrincipal, kHost, AclOperation::kRead, ResourceType::kTopic,
                          "orders.eu.west.billing.events.v2");
    if (!ok) state.SkipWithError("expected allowed");
    benchmark::DoNotOptimize(ok);
  }
}
BENCHMARK(PrefixedAllow)->Name("Acl/prefixed_allow")->ArgName("prefixes")->Arg(1)->Arg(8)->Arg(24);

void Denied(benchmark::State& state) {
  auto a = MakeAuthorizer(OtherTopics(static_cast<int>(state.range(0))));
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        a->Authorize(kPrincipal, kHost, AclOperation::kWrite, ResourceType::kTopic, "orders"));
  }
}
BENCHMARK(Denied)->Name("Acl/denied")->ArgName("acls")->Arg(1000);

std::unique_ptr<Authorizer> shared_authorizer;

void Threads(benchmark::State& state) {
  if (state.thread_index() == 0) {
    std::vector<AclBinding> acls = OtherTopics(1000);
    acls.push_back({ResourceType::kTopic, "orders", PatternType::kLiteral, kPrincipal, "*",
                    AclOperation::kWrite, AclPermission::kAllow});
    shared_authorizer = MakeAuthorizer(std::move(acls));
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(shared_authorizer->Authorize(
        kPrincipal, kHost, AclOperation::kWrite, ResourceType::kTopic, "orders"));
  }
  if (state.thread_index() == 0) {
    shared_authorizer.reset();
  }
}
BENCHMARK(Threads)->Name("Acl/threads")->Threads(4)->UseRealTime();

}  // namespace
}  // namespace headrace

BENCHMARK_MAIN();
