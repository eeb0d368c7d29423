// The export of RecordColumns through the Arrow C data interface. Every
// ArrowArray node (the struct array and each child, grandchildren for the
// headers) owns a Node as private_data; all nodes share the Columns by a
// shared_ptr, so the buffers live until the last node is released. A node's
// release releases its children first (the specification's rule for a
// parent), then frees itself and marks the struct released.
#include <memory>
#include <utility>

#include "pipeline/columns.h"

namespace headrace::pipeline {
namespace {

struct Node {
  std::shared_ptr<const RecordColumns::Columns> owner;
  std::vector<const void*> buffers;
  std::vector<ArrowArray> child_storage;
  std::vector<ArrowArray*> children;
};

void ReleaseNode(ArrowArray* a) {
  if (a == nullptr || a->release == nullptr) return;
  auto* node = static_cast<Node*>(a->private_data);
  for (ArrowArray* child : node->children)
    if (child->release != nullptr) child->release(child);
  delete node;
  a->release = nullptr;
  a->private_data = nullptr;
}

// Fills `a` as a node of `length` rows with `buffers`, `nulls` nulls and
// `n_children` children to be filled by the caller (returned).
Node* Fill(ArrowArray* a, std::shared_ptr<const RecordColumns::Columns> owner, int64_t length,
           int64_t nulls, std::vector<const void*> buffers, size_t n_children) {
  auto* node = new Node{std::move(owner), std::move(buffers), {}, {}};
  node->child_storage.resize(n_children);
  for (ArrowArray& c : node->child_storage) node->children.push_back(&c);
  *a = ArrowArray{};
  a->length = length;
  a->null_count = nulls;
  a->offset = 0;
  a->n_buffers = static_cast<int64_t>(node->buffers.size());
  a->n_children = static_cast<int64_t>(n_children);
  a->buffers = node->buffers.data();
  a->children = n_children ? node->children.data() : nullptr;
  a->dictionary = nullptr;
  a->release = ReleaseNode;
  a->private_data = node;
  return node;
}

using Owner = std::shared_ptr<const RecordColumns::Columns>;

const void* Bits(const Validity& v) { return v.nulls == 0 ? nullptr : v.bits.data(); }

void FillVar(ArrowArray* a, const Owner& o, const VarColumn& c) {
  Fill(a, o, static_cast<int64_t>(c.offsets.size()) - 1, c.valid.nulls,
       {Bits(c.valid), c.offsets.data(), c.data.data()}, 0);
}

template <typename T>
void FillFixed(ArrowArray* a, const Owner& o, const std::vector<T>& v,
               const Validity* valid = nullptr) {
  Fill(a, o, static_cast<int64_t>(v.size()), valid ? valid->nulls : 0,
       {valid ? Bits(*valid) : nullptr, v.data()}, 0);
}

}  // namespace

void ExportColumns(std::unique_ptr<RecordColumns::Columns> cols, const std::string& topic,
                   int32_t partition, bool include_headers, ArrowArray* out) {
  const int64_t n = cols->rows();
  cols->topic_offsets.resize(static_cast<size_t>(n) + 1);
  for (int64_t i = 0; i <= n; ++i)
    cols->topic_offsets[i] = static_cast<int32_t>(i * static_cast<int64_t>(topic.size()));
  cols->topic_data.reserve(static_cast<size_t>(n) * topic.size());
  for (int64_t i = 0; i < n; ++i) cols->topic_data += topic;
  cols->partition.assign(static_cast<size_t>(n), partition);
  Owner o(std::move(cols));
  const RecordColumns::Columns& c = *o;

  Node* root = Fill(out, o, n, 0, {nullptr}, include_headers ? 8 : 7);
  ArrowArray** ch = root->children.data();
  FillVar(ch[0], o, c.key);
  FillVar(ch[1], o, c.value);
  Fill(ch[2], o, n, 0, {nullptr, c.topic_offsets.data(), c.topic_data.data()}, 0);
  FillFixed(ch[3], o, c.partition);
  FillFixed(ch[4], o, c.offset);
  FillFixed(ch[5], o, c.timestamp_us, &c.timestamp_valid);
  FillFixed(ch[6], o, c.timestamp_type);
  if (include_headers) {
    // list<struct<key, value>>: list offsets into the entries, no null lists
    Node* list = Fill(ch[7], o, n, 0, {nullptr, c.header_offsets.data()}, 1);
    const int64_t entries = static_cast<int64_t>(c.header_key.offsets.size()) - 1;
    Node* entry = Fill(list->children[0], o, entries, 0, {nullptr}, 2);
    FillVar(entry->children[0], o, c.header_key);
    FillVar(entry->children[1], o, c.header_value);
  }
}

}  // namespace headrace::pipeline
