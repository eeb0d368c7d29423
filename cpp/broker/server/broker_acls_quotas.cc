// BrokerImpl: the authorizer's ACLs, client quotas and replication
// throttles.
#include "broker/server/broker_impl.h"

#include "broker/config/dynamic_family_config.h"
#include "common/logging.h"
#include "net/certificate_subject.h"

namespace headrace {

void BrokerImpl::StartReplicationQuotas() {
  namespace rq = broker::replication;
  broker::DynamicBrokerConfig& dynamic = state_->dynamic_config();
  const std::map<std::string, std::string>& start = config_.start_properties;
  replication_quotas_ = std::make_unique<rq::ReplicationQuotas>(
      broker::EffectiveFamilyConfig(rq::ReplicationQuotaKeys(), start, dynamic.layers()));
  dynamic.Subscribe([q = replication_quotas_.get(), &start](const broker::DynamicBrokerLayers& l) {
    q->Reconfigure(broker::EffectiveFamilyConfig(rq::ReplicationQuotaKeys(), start, l));
  });
  ctx_.replication_quotas = replication_quotas_.get();
}

Status BrokerImpl::OpenAcls() {
  ctx_.authorizer = &authorizer_;
  ctx_.acl_store = nullptr;
  acl_store_.reset();
  if (!authorizer_.enabled()) return Status::OK();
  HR_LOG(kInfo) << "authorizer " << authorizer_.config().class_name << " enabled ("
                << authorizer_.config().super_users.size() << " super user(s), "
                << "allow.everyone.if.no.acl.found="
                << (authorizer_.config().allow_everyone_if_no_acl_found ? "true" : "false") << ")";
  if (config_.cluster_mode()) return Status::OK();
  HR_ASSIGN_OR_RETURN(acl_store_,
                      broker::auth::FileAclStore::Open(config_.file_env, config_.data_dir, &authorizer_));
  ctx_.acl_store = acl_store_.get();
  return Status::OK();
}

Status BrokerImpl::Authorize(const std::string& principal, const std::string& host,
                             const std::string& operation, const std::string& resource_type,
                             const std::string& name, bool* allowed) const {
  namespace auth = broker::auth;
  auth::AclOperation op = auth::ParseOperation(operation);
  if (op == auth::AclOperation::kUnknown || op == auth::AclOperation::kAny) {
    return Status::InvalidArgument("unknown ACL operation: " + operation);
  }
  auth::ResourceType type = auth::ParseResourceType(resource_type);
  if (type == auth::ResourceType::kUnknown || type == auth::ResourceType::kAny) {
    return Status::InvalidArgument("unknown resource type: " + resource_type);
  }
  *allowed = authorizer_.Authorize(principal, host, op, type, name);
  return Status::OK();
}

void BrokerImpl::ApplyClusterAcls(const broker::json::Value& acls) {
  std::string text = broker::json::Write(acls);
  if (text == applied_acls_) return;
  auto bindings = broker::auth::BindingsFromJson(acls);
  if (!bindings.ok()) {
    HR_LOG(kWarn) << "cluster state: ACLs not applied: " << bindings.status().message();
    return;
  }
  HR_LOG(kInfo) << "cluster state: " << bindings->size() << " ACL binding(s) in force";
  authorizer_.Publish(std::make_shared<const broker::auth::AclSnapshot>(std::move(bindings).value()));
  applied_acls_ = std::move(text);
}

Status BrokerImpl::OpenClientQuotas() {
  HR_ASSIGN_OR_RETURN(client_quotas_,
                      broker::quota::ClientQuotaStore::Open(config_.data_dir, file_env_.get()));
  quotas_ = std::make_unique<broker::quota::QuotaManager>(quota_config_, client_quotas_.get());
  ctx_.client_quotas = client_quotas_.get();
  ctx_.quotas = quotas_.get();
  HR_ASSIGN_OR_RETURN(group_configs_,
                      broker::group::GroupConfigStore::Open(config_.data_dir, file_env_.get()));
  ctx_.group_configs = group_configs_.get();
  return Status::OK();
}

std::string CertificatePrincipal(const std::string& der) {
  std::string subject = net::CertificateSubjectRfc2253(der);
  return subject.empty() ? "" : "User:" + subject;
}

}  // namespace headrace
