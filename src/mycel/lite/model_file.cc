// Writing and verified loading of MINDIR files (see model_file.h for the layout).
#include "mycel/lite/model_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "mindir_generated.h"
#include "mycel/core/crc32c.h"
#include "mycel/core/error.h"

namespace mycel::lite {
namespace {

// The header: magic, version, sizes and offsets of the two sections, and their CRC-32C.
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t header_size;
  uint64_t graph_offset;
  uint64_t graph_size;
  uint64_t data_offset;
  uint64_t data_size;
  uint32_t graph_crc;
  uint32_t data_crc;
  uint8_t reserved[8];
};
static_assert(sizeof(Header) == kAlign);

uint64_t align_up(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

fb::AttrKind kind_of(const AttrValue& v) {
  switch (v.index()) {
    case 1:
      return fb::AttrKind::Bool;
    case 2:
      return fb::AttrKind::Int;
    case 3:
      return fb::AttrKind::Float;
    case 4:
      return fb::AttrKind::Str;
    case 5:
      return fb::AttrKind::Ints;
    case 6:
      return fb::AttrKind::Floats;
    case 7:
      return fb::AttrKind::DType;
    default:
      return fb::AttrKind::None;
  }
}

// Elements of `shape`, or an error when a dim is negative or the count overflows.
uint64_t checked_numel(const Shape& shape, DType dt, const std::string& what) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      MYCEL_THROW(ValueError, what, " has a dynamic or negative dim in ", shape_str(shape));
    if (d != 0 && n > (uint64_t{1} << 56) / static_cast<uint64_t>(d))
      MYCEL_THROW(ValueError, what, " has too many elements (", shape_str(shape), ")");
    n *= static_cast<uint64_t>(d);
  }
  (void)dt;
  return n;
}

bool is_quant_op(const std::string& op) {
  return op == "qconv2d" || op == "qdense" || op == "qadd" || op == "qavg_pool2d" ||
         op == "quantize_linear" || op == "dequantize_linear";
}

// int8 nodes are checked at load, not first at run time: their weights must be stored int8
// constants and the op's own shape rule (scales positive and finite, one weight scale per output
// channel, zero points in range, dtypes and sizes consistent) must accept the declared shapes,
// the dynamic batch dim taken as 1.
void verify_quantized(const Graph& g, const std::string& where) {
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const NodeInfo& n = g.nodes[k];
    if (!is_quant_op(n.op->name)) continue;
    const std::string what = "node " + std::to_string(k) + " (" + n.op->name + ")";
    const bool has_w = n.op->name == "qconv2d" || n.op->name == "qdense";
    if (has_w && (n.inputs.size() < 2 || n.inputs[1] < 0 || g.values[n.inputs[1]].weight < 0 ||
                  g.values[n.inputs[1]].dtype != DType::int8))
      MYCEL_THROW(ValueError, where, ": ", what,
                  " must read its weights from a stored int8 constant");
    std::vector<TensorMeta> metas(n.inputs.size());
    std::vector<const TensorMeta*> ins;
    bool dynamic = false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] < 0) {
        ins.push_back(nullptr);
        continue;
      }
      const ValueInfo& v = g.values[n.inputs[i]];
      metas[i] = TensorMeta{v.shape, v.dtype};
      for (size_t d = 0; d < metas[i].shape.size(); ++d)
        if (metas[i].shape[d] < 0) {
          if (d == 0)
            metas[i].shape[d] = 1;
          else
            dynamic = true;
        }
      ins.push_back(&metas[i]);
    }
    if (dynamic) continue;  // checked when the run plans its shapes
    while (ins.size() < n.op->inputs.size()) ins.push_back(nullptr);
    try {
      infer_checked(*n.op, InferContext{*n.op, ins, n.attrs});
    } catch (const Error& e) {
      MYCEL_THROW(ValueError, where, ": ", what, ": ", e.what());
    }
  }
}

}  // namespace

void validate(const Graph& g, const std::string& where) {
  const int nv = static_cast<int>(g.values.size());
  std::vector<char> defined(nv, 0);
  auto check_id = [&](int id, const std::string& what) {
    if (id < 0 || id >= nv)
      MYCEL_THROW(ValueError, where, ": ", what, " refers to value ", id, " of ", nv);
  };
  for (int i = 0; i < nv; ++i) {
    const ValueInfo& v = g.values[i];
    if (v.weight >= 0) {
      if (v.weight >= static_cast<int>(g.weights.size()))
        MYCEL_THROW(ValueError, where, ": value ", i, " names weight ", v.weight, " of ",
                    g.weights.size());
      const Tensor& w = g.weights[v.weight];
      if (w.dtype() != v.dtype || w.shape() != v.shape)
        MYCEL_THROW(ValueError, where, ": weight of value ", i, " ('", v.name, "') is ",
                    dtype_name(w.dtype()), shape_str(w.shape()), ", the value says ",
                    dtype_name(v.dtype), shape_str(v.shape));
      defined[i] = 1;
    }
    for (int64_t d : v.shape)
      if (d < -1) MYCEL_THROW(ValueError, where, ": value ", i, " has dim ", d);
  }
  for (int id : g.inputs) {
    check_id(id, "an input");
    if (defined[id]) MYCEL_THROW(ValueError, where, ": input value ", id, " is defined twice");
    defined[id] = 1;
  }
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const NodeInfo& n = g.nodes[k];
    const std::string what = "node " + std::to_string(k) + " (" + (n.op ? n.op->name : "?") + ")";
    if (!n.op) MYCEL_THROW(ValueError, where, ": ", what, " has no op");
    const bool variadic = !n.op->inputs.empty() && n.op->inputs.back().variadic;
    if (!variadic && n.inputs.size() > n.op->inputs.size())
      MYCEL_THROW(ValueError, where, ": ", what, " has ", n.inputs.size(),
                  " inputs, the op takes at most ", n.op->inputs.size());
    if (n.inputs.size() > 100000)
      MYCEL_THROW(ValueError, where, ": ", what, " has ", n.inputs.size(), " inputs");
    for (size_t i = 0; i < std::max(n.op->inputs.size(), n.inputs.size()); ++i) {
      int id = i < n.inputs.size() ? n.inputs[i] : -1;
      const InputDef& def = n.op->inputs[std::min(i, n.op->inputs.size() - 1)];
      if (id == -1) {
        if (!def.optional && !def.variadic)
          MYCEL_THROW(ValueError, where, ": ", what, " lacks its required input '", def.name, "'");
        continue;
      }
      check_id(id, what + " input " + std::to_string(i));
      // Every input defined earlier: this rejects cycles and forward references.
      if (!defined[id])
        MYCEL_THROW(ValueError, where, ": ", what, " reads value ", id,
                    " before it is defined (a cycle or "
                    "a node out of order)");
    }
    if (n.outputs.empty()) MYCEL_THROW(ValueError, where, ": ", what, " has no outputs");
    for (int id : n.outputs) {
      if (id == -1) continue;  // an output nobody reads
      check_id(id, what + " output");
      if (defined[id]) MYCEL_THROW(ValueError, where, ": ", what, " redefines value ", id);
      defined[id] = 1;
    }
  }
  if (g.outputs.empty()) MYCEL_THROW(ValueError, where, ": the model has no outputs");
  for (int id : g.outputs) {
    check_id(id, "a model output");
    if (!defined[id])
      MYCEL_THROW(ValueError, where, ": model output value ", id, " is never computed");
  }
}

std::string serialize(const Graph& g) {
  validate(g, "MINDIR writer");
  flatbuffers::FlatBufferBuilder b(1 << 16);
  std::vector<flatbuffers::Offset<fb::Weight>> weights;
  uint64_t data_size = 0;
  for (const Tensor& w : g.weights) {
    weights.push_back(fb::CreateWeight(b, data_size, w.nbytes()));
    data_size = align_up(data_size + w.nbytes());
  }
  std::vector<flatbuffers::Offset<fb::Value>> values;
  for (const ValueInfo& v : g.values)
    values.push_back(fb::CreateValue(b, b.CreateString(v.name), static_cast<int8_t>(v.dtype),
                                     b.CreateVector(v.shape), v.weight));
  std::vector<flatbuffers::Offset<fb::Node>> nodes;
  for (const NodeInfo& n : g.nodes) {
    std::vector<flatbuffers::Offset<fb::Attr>> attrs;
    const auto& vals = n.attrs.values();
    for (size_t i = 0; i < n.op->attrs.size() && i < vals.size(); ++i) {
      const AttrValue& a = vals[i];
      // strings and vectors are created before the table that refers to them
      auto name = b.CreateString(n.op->attrs[i].name);
      flatbuffers::Offset<flatbuffers::String> s;
      flatbuffers::Offset<flatbuffers::Vector<int64_t>> ints;
      flatbuffers::Offset<flatbuffers::Vector<double>> floats;
      if (auto* p = std::get_if<std::string>(&a)) s = b.CreateString(*p);
      if (auto* p = std::get_if<std::vector<int64_t>>(&a)) ints = b.CreateVector(*p);
      if (auto* p = std::get_if<std::vector<double>>(&a)) floats = b.CreateVector(*p);
      int64_t iv = 0;
      double fv = 0;
      if (auto* p = std::get_if<bool>(&a)) iv = *p;
      if (auto* p = std::get_if<int64_t>(&a)) iv = *p;
      if (auto* p = std::get_if<DType>(&a)) iv = static_cast<int64_t>(*p);
      if (auto* p = std::get_if<double>(&a)) fv = *p;
      attrs.push_back(fb::CreateAttr(b, name, kind_of(a), iv, fv, s, ints, floats));
    }
    nodes.push_back(fb::CreateNode(b, b.CreateString(n.op->name), b.CreateString(n.name),
                                   b.CreateVector(n.inputs), b.CreateVector(n.outputs),
                                   b.CreateVector(attrs)));
  }
  auto model =
      fb::CreateModel(b, kFormatVersion, b.CreateString(g.producer), b.CreateVector(values),
                      b.CreateVector(weights), b.CreateVector(nodes), b.CreateVector(g.inputs),
                      b.CreateVector(g.outputs));
  fb::FinishModelBuffer(b, model);

  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kFormatVersion;
  h.header_size = sizeof(Header);
  h.graph_offset = kAlign;
  h.graph_size = b.GetSize();
  h.data_offset = align_up(h.graph_offset + h.graph_size);
  h.data_size = data_size;
  std::string out(h.data_offset + h.data_size, '\0');
  std::memcpy(out.data() + h.graph_offset, b.GetBufferPointer(), b.GetSize());
  uint64_t off = 0;
  for (const Tensor& w : g.weights) {
    std::memcpy(out.data() + h.data_offset + off, w.data(), w.nbytes());
    off = align_up(off + w.nbytes());
  }
  h.graph_crc = crc32c(out.data() + h.graph_offset, h.graph_size);
  h.data_crc = crc32c(out.data() + h.data_offset, h.data_size);
  std::memcpy(out.data(), &h, sizeof(h));
  return out;
}

// A scalar vector's elements, copied bytewise. The FlatBuffers verifier checks a vector's
// 4-byte length prefix but not that 8-byte elements (int64, double) sit on 8-byte boundaries,
// so a hostile file can place them anywhere; reading through memcpy is defined at any address
// (and compiles to plain loads on x86). Element types are fixed-size little-endian scalars.
template <class T>
std::vector<T> copy_vector(const flatbuffers::Vector<T>* v) {
  static_assert(std::is_arithmetic_v<T>);
  if (!v || v->size() == 0) return {};
  std::vector<T> out(v->size());
  std::memcpy(out.data(), v->Data(), v->size() * sizeof(T));
  return out;
}

Graph parse(const uint8_t* data, size_t size, std::shared_ptr<void> keep) {
  const std::string where = "MINDIR";
  // 1. Header: magic, version, and sections inside the file (overflow-checked).
  if (size < sizeof(Header))
    MYCEL_THROW(ValueError, where, ": the file has ", size, " bytes, fewer than its ",
                sizeof(Header), "-byte header");
  Header h;
  std::memcpy(&h, data, sizeof(h));
  if (std::memcmp(h.magic, kMagic, 8) != 0)
    MYCEL_THROW(ValueError, where, ": not a Mycel model file (bad magic)");
  if (h.version < kMinFormatVersion || h.version > kFormatVersion)
    MYCEL_THROW(ValueError, where, ": format version ", h.version,
                " is not supported (this build reads ", kMinFormatVersion, " to ", kFormatVersion,
                ")");
  if (h.header_size != sizeof(Header) || h.graph_offset != kAlign)
    MYCEL_THROW(ValueError, where, ": header size ", h.header_size, " / graph offset ",
                h.graph_offset, " should be ", kAlign);
  if (h.graph_size > size || h.graph_offset > size - h.graph_size)
    MYCEL_THROW(ValueError, where, ": the graph section (", h.graph_size, " bytes at ",
                h.graph_offset, ") runs past the end of the ", size, "-byte file (truncated?)");
  if (h.data_offset % kAlign || h.data_offset < h.graph_offset + h.graph_size ||
      h.data_offset > size || h.data_size != size - h.data_offset)
    MYCEL_THROW(ValueError, where, ": the weight section (", h.data_size, " bytes at ",
                h.data_offset, ") does not end the ", size,
                "-byte file on a 64-byte boundary (truncated or padded?)");
  // 2. Checksums.
  if (crc32c(data + h.graph_offset, h.graph_size) != h.graph_crc)
    MYCEL_THROW(ValueError, where, ": the graph section's checksum does not match (corrupt file)");
  if (crc32c(data + h.data_offset, h.data_size) != h.data_crc)
    MYCEL_THROW(ValueError, where, ": the weight section's checksum does not match (corrupt file)");
  // 3. FlatBuffers verifier: every offset and vector inside the graph section, bounded depth.
  const uint8_t* gb = data + h.graph_offset;
  flatbuffers::Verifier v(gb, h.graph_size, /*max_depth=*/16, /*max_tables=*/4000000);
  if (!fb::ModelBufferHasIdentifier(gb) || !fb::VerifyModelBuffer(v))
    MYCEL_THROW(ValueError, where,
                ": the graph section is not a valid model table (FlatBuffers verifier)");
  const fb::Model* m = fb::GetModel(gb);
  if (m->version() != h.version)
    MYCEL_THROW(ValueError, where, ": graph version ", m->version(), " differs from the header's ",
                h.version);

  // 4. Decode, checking each field's meaning.
  Graph g;
  if (m->producer()) g.producer = m->producer()->str();
  const uint8_t* section = data + h.data_offset;
  if (m->weights()) {
    for (const fb::Weight* w : *m->weights()) {
      if (w->offset() % kAlign || w->offset() > h.data_size ||
          w->nbytes() > h.data_size - w->offset())
        MYCEL_THROW(ValueError, where, ": weight ", g.weights.size(), " (", w->nbytes(),
                    " bytes at ", w->offset(), ") is misaligned or outside the ", h.data_size,
                    "-byte weight section");
      g.weights.push_back(Tensor());  // shaped below, from its value
    }
  }
  std::vector<int> weight_value(g.weights.size(), -1);
  if (m->values()) {
    for (const fb::Value* fv : *m->values()) {
      ValueInfo vi;
      const int idx = static_cast<int>(g.values.size());
      if (fv->name()) vi.name = fv->name()->str();
      if (fv->dtype() < 0 || fv->dtype() >= kNumDTypes)
        MYCEL_THROW(ValueError, where, ": value ", idx, " has dtype code ", int(fv->dtype()));
      vi.dtype = static_cast<DType>(fv->dtype());
      if (fv->shape()) {
        if (fv->shape()->size() > 16)
          MYCEL_THROW(ValueError, where, ": value ", idx, " has rank ", fv->shape()->size());
        vi.shape = copy_vector(fv->shape());
      }
      vi.weight = fv->weight();
      if (vi.weight < -1 || vi.weight >= static_cast<int>(g.weights.size()))
        MYCEL_THROW(ValueError, where, ": value ", idx, " names weight ", vi.weight, " of ",
                    g.weights.size());
      if (vi.weight >= 0) {
        if (weight_value[vi.weight] >= 0)
          MYCEL_THROW(ValueError, where, ": weight ", vi.weight, " belongs to two values");
        weight_value[vi.weight] = idx;
        const fb::Weight* w = m->weights()->Get(vi.weight);
        const uint64_t n = checked_numel(vi.shape, vi.dtype, "weight '" + vi.name + "'");
        if (n * itemsize(vi.dtype) != w->nbytes())
          MYCEL_THROW(ValueError, where, ": weight '", vi.name, "' is ", dtype_name(vi.dtype),
                      shape_str(vi.shape), " (", n * itemsize(vi.dtype), " bytes) but stores ",
                      w->nbytes(), " bytes");
        auto storage =
            Storage::borrow(const_cast<uint8_t*>(section + w->offset()), w->nbytes(), [keep] {});
        g.weights[vi.weight] = Tensor(storage, 0, vi.shape, vi.dtype);
      }
      g.values.push_back(std::move(vi));
    }
  }
  for (size_t i = 0; i < weight_value.size(); ++i)
    if (weight_value[i] < 0) MYCEL_THROW(ValueError, where, ": weight ", i, " belongs to no value");
  if (m->nodes()) {
    for (const fb::Node* fn : *m->nodes()) {
      NodeInfo n;
      const std::string opname = fn->op()->str();
      n.op = Registry::get().find(opname);
      if (!n.op)
        MYCEL_THROW(ValueError, where, ": node ", g.nodes.size(), " calls unknown op '", opname,
                    "'");
      if (n.op->random || n.op->effect)
        MYCEL_THROW(ValueError, where, ": node ", g.nodes.size(), " calls '", opname,
                    "', which has no place in an inference model");
      if (fn->name()) n.name = fn->name()->str();
      n.inputs = copy_vector(fn->inputs());
      n.outputs = copy_vector(fn->outputs());
      std::map<std::string, AttrValue> named;
      if (fn->attrs()) {
        for (const fb::Attr* a : *fn->attrs()) {
          AttrValue val;
          switch (a->kind()) {
            case fb::AttrKind::None:
              break;
            case fb::AttrKind::Bool:
              val = a->i() != 0;
              break;
            case fb::AttrKind::Int:
              val = static_cast<int64_t>(a->i());
              break;
            case fb::AttrKind::Float:
              val = a->f();
              break;
            case fb::AttrKind::Str:
              val = a->s() ? a->s()->str() : std::string();
              break;
            case fb::AttrKind::Ints:
              val = copy_vector(a->ints());
              break;
            case fb::AttrKind::Floats:
              val = copy_vector(a->floats());
              break;
            case fb::AttrKind::DType:
              if (a->i() < 0 || a->i() >= kNumDTypes)
                MYCEL_THROW(ValueError, where, ": node ", g.nodes.size(), " attribute '",
                            a->name()->str(), "' has dtype code ", a->i());
              val = static_cast<DType>(a->i());
              break;
            default:
              MYCEL_THROW(ValueError, where, ": node ", g.nodes.size(), " attribute '",
                          a->name()->str(), "' has kind ", int(a->kind()));
          }
          if (n.op->attr_index(a->name()->str()) < 0)
            MYCEL_THROW(ValueError, where, ": node ", g.nodes.size(), " (", opname,
                        ") has no attribute '", a->name()->str(), "'");
          if (val.index() != 0) named[a->name()->str()] = std::move(val);
        }
      }
      try {
        n.attrs = make_attrs(*n.op, named);  // kinds and required attributes, as any op call
      } catch (const Error& e) {
        MYCEL_THROW(ValueError, where, ": node ", g.nodes.size(), ": ", e.what());
      }
      g.nodes.push_back(std::move(n));
    }
  }
  g.inputs = copy_vector(m->inputs());
  g.outputs = copy_vector(m->outputs());
  validate(g, where);
  verify_quantized(g, where);
  return g;
}

Graph load(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) MYCEL_THROW(ValueError, "MINDIR: cannot open '", path, "': ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    MYCEL_THROW(ValueError, "MINDIR: '", path, "' is not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    MYCEL_THROW(ValueError, "MINDIR: '", path, "' is empty");
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED)
    MYCEL_THROW(ValueError, "MINDIR: cannot map '", path, "': ", std::strerror(errno));
  std::shared_ptr<void> keep(p, [size](void* q) { ::munmap(q, size); });
  try {
    return parse(static_cast<const uint8_t*>(p), size, keep);
  } catch (const ValueError& e) {
    MYCEL_THROW(ValueError, e.what(), " ('", path, "')");
  }
}

}  // namespace mycel::lite
