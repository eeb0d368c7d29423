#include "broker/cluster/cluster_view.h"

#include <algorithm>

#include "broker/base/json.h"
#include "broker/config/listener.h"

namespace headrace::broker {
namespace {

Status Bad(const std::string& what) {
  return Status::InvalidArgument("cluster state: " + what);
}

Result<int64_t> Int(const json::Value& obj, const std::string& key, const std::string& where) {
  const json::Value* v = obj.Find(key);
  if (v == nullptr || !v->is_int()) return Bad(where + "." + key + " must be an integer");
  return v->as_int();
}

Result<std::vector<int32_t>> Ids(const json::Value& obj, const std::string& key,
                                 const std::string& where) {
  const json::Value* v = obj.Find(key);
  if (v == nullptr || !v->is_array()) return Bad(where + "." + key + " must be an array");
  std::vector<int32_t> out;
  for (const json::Value& e : v->as_array()) {
    if (!e.is_int()) return Bad(where + "." + key + " must hold integers");
    out.push_back(static_cast<int32_t>(e.as_int()));
  }
  return out;
}

// "NAME://host:port" (listener.h's form) as a broker's listener address.
Result<BrokerEndpoint::Listener> ParseEndpoint(const std::string& text) {
  auto parsed = ParseListeners("brokers[].endpoints[]", text);
  if (!parsed.ok() || parsed->size() != 1) return Bad("bad endpoint '" + text + "'");
  const Listener& l = parsed->front();
  return BrokerEndpoint::Listener{l.name, l.host, l.port};
}

Result<TopicView> ParseTopic(const json::Value& t) {
  TopicView out;
  const json::Value* name = t.Find("name");
  if (name == nullptr || !name->is_string()) return Bad("topics[].name must be a string");
  out.name = name->as_string();
  const std::string where = "topic " + out.name;
  const json::Value* id = t.Find("id");
  if (id == nullptr || !id->is_string()) return Bad(where + ".id must be a string");
  auto uuid = Uuid::FromBase64(id->as_string());
  if (!uuid.ok()) return Bad(where + ".id: " + uuid.status().message());
  out.id = *uuid;
  if (const json::Value* c = t.Find("configs"); c != nullptr && c->is_object()) {
    for (const auto& [k, v] : c->as_object()) {
      if (!v.is_string()) return Bad(where + ".configs." + k + " must be a string");
      out.configs[k] = v.as_string();
    }
  }
  const json::Value* parts = t.Find("partitions");
  if (parts == nullptr || !parts->is_array()) return Bad(where + ".partitions must be an array");
  for (const json::Value& p : parts->as_array()) {
    PartitionAssignment a;
    HR_ASSIGN_OR_RETURN(int64_t index, Int(p, "partition", where));
    if (index != static_cast<int64_t>(out.partitions.size())) {
      return Bad(where + ": partitions must be listed 0..n-1 in order");
    }
    a.partition = static_cast<int32_t>(index);
    HR_ASSIGN_OR_RETURN(int64_t leader, Int(p, "leader", where));
    HR_ASSIGN_OR_RETURN(int64_t epoch, Int(p, "leader_epoch", where));
    a.leader = static_cast<int32_t>(leader);
    a.leader_epoch = static_cast<int32_t>(epoch);
    HR_ASSIGN_OR_RETURN(a.replicas, Ids(p, "replicas", where));
    HR_ASSIGN_OR_RETURN(a.isr, Ids(p, "isr", where));
    out.partitions.push_back(std::move(a));
  }
  return out;
}

}  // namespace

bool BrokerEndpoint::AddressFor(std::string_view name, std::string* out_host,
                                int32_t* out_port) const {
  if (name.empty() || listeners.empty()) {
    *out_host = host;
    *out_port = port;
    return true;
  }
  for (const Listener& l : listeners) {
    if (l.name == name) {
      *out_host = l.host;
      *out_port = l.port;
      return true;
    }
  }
  return false;
}

const BrokerEndpoint* ClusterView::FindBroker(int32_t id) const {
  for (const BrokerEndpoint& b : brokers) {
    if (b.id == id) return &b;
  }
  return nullptr;
}

const TopicView* ClusterView::FindTopic(std::string_view name) const {
  auto it = topics.find(name);
  return it == topics.end() ? nullptr : &it->second;
}

const TopicView* ClusterView::FindTopicById(const Uuid& id) const {
  for (const auto& [name, t] : topics) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

Result<std::shared_ptr<const ClusterView>> ParseClusterView(std::string_view json_text) {
  auto parsed = json::Parse(json_text);
  if (!parsed.ok()) return Bad(parsed.status().message());
  const json::Value& root = *parsed;
  if (!root.is_object()) return Bad("the document must be an object");
  auto view = std::make_shared<ClusterView>();
  if (const json::Value* c = root.Find("cluster_id"); c != nullptr && c->is_string()) {
    view->cluster_id = c->as_string();
  }
  HR_ASSIGN_OR_RETURN(int64_t controller, Int(root, "controller_id", "state"));
  view->controller_id = static_cast<int32_t>(controller);
  if (const json::Value* e = root.Find("controller_epoch"); e != nullptr && e->is_int()) {
    view->controller_epoch = static_cast<int32_t>(e->as_int());
  }
  if (const json::Value* e = root.Find("broker_epoch"); e != nullptr && e->is_int()) {
    view->local_broker_epoch = e->as_int();
  }
  const json::Value* brokers = root.Find("brokers");
  if (brokers == nullptr || !brokers->is_array()) return Bad("brokers must be an array");
  for (const json::Value& b : brokers->as_array()) {
    BrokerEndpoint e;
    HR_ASSIGN_OR_RETURN(int64_t id, Int(b, "id", "brokers[]"));
    HR_ASSIGN_OR_RETURN(int64_t port, Int(b, "port", "brokers[]"));
    const json::Value* host = b.Find("host");
    if (host == nullptr || !host->is_string()) return Bad("brokers[].host must be a string");
    e.id = static_cast<int32_t>(id);
    e.port = static_cast<int32_t>(port);
    e.host = host->as_string();
    if (const json::Value* r = b.Find("rack"); r != nullptr && r->is_string()) e.rack = r->as_string();
    if (const json::Value* ep = b.Find("epoch"); ep != nullptr && ep->is_int()) e.epoch = ep->as_int();
    if (const json::Value* eps = b.Find("endpoints"); eps != nullptr && eps->is_array()) {
      for (const json::Value& ep : eps->as_array()) {
        if (!ep.is_string()) return Bad("brokers[].endpoints[] must be strings");
        HR_ASSIGN_OR_RETURN(BrokerEndpoint::Listener l, ParseEndpoint(ep.as_string()));
        e.listeners.push_back(std::move(l));
      }
    }
    view->brokers.push_back(std::move(e));
  }
  std::sort(view->brokers.begin(), view->brokers.end(),
            [](const BrokerEndpoint& a, const BrokerEndpoint& b) { return a.id < b.id; });
  const json::Value* topics = root.Find("topics");
  if (topics == nullptr || !topics->is_array()) return Bad("topics must be an array");
  for (const json::Value& t : topics->as_array()) {
    HR_ASSIGN_OR_RETURN(TopicView topic, ParseTopic(t));
    std::string name = topic.name;
    view->topics.emplace(std::move(name), std::move(topic));
  }
  if (const json::Value* bc = root.Find("broker_configs"); bc != nullptr && bc->is_object()) {
    auto layer = [&](const char* name) {
      std::map<std::string, std::string> out;
      const json::Value* l = bc->Find(name);
      if (l == nullptr || !l->is_object()) return out;
      for (const auto& [k, v] : l->as_object()) {
        if (v.is_string()) out[k] = v.as_string();
      }
      return out;
    };
    view->broker_configs.emplace(layer("default"), layer("broker"));
  }
  if (const json::Value* acls = root.Find("acls"); acls != nullptr && acls->is_array()) {
    view->acls = *acls;
  }
  return std::shared_ptr<const ClusterView>(std::move(view));
}

}  // namespace headrace::broker
