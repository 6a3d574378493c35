// The ONNX writer of `gmi_drl export` (built when Debian's libonnx-dev is found): the model is
// built with the ONNX protobuf schema and checked with onnx::checker before it is written.
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>

#include "gmi_version.hpp"
#include "kernels/core/error.hpp"
#include "kernels/envs/registry.hpp"
#include "src/algos/ppo/ppo.hpp"
#include "src/algos/registry.hpp"
#include "src/checkpoint/checkpoint.hpp"
#include "src/config/config.hpp"
#include "src/tools/export.hpp"
#include "src/algos/ppo/section.hpp"

namespace gmi::tools::detail {
namespace {

class GraphBuilder {
 public:
  explicit GraphBuilder(onnx::GraphProto* g) : g_(g) {}

  /// A float initializer of the given shape.
  std::string constant(const std::string& name, const std::vector<float>& v, const std::vector<std::int64_t>& dims) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (auto d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
    return name;
  }

  /// A node with one output; returns the output's name.
  std::string node(const std::string& op, const std::vector<std::string>& in, const std::string& out) {
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(out + "/" + op);
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
    last_ = n;
    return out;
  }
  void attr(const std::string& name, std::int64_t v) {
    onnx::AttributeProto* a = last_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  void attr(const std::string& name, float v) {
    onnx::AttributeProto* a = last_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  /// A graph input or output [batch, width] (width 0: [batch]).
  void value(bool input, const std::string& name, int elem_type, int width) {
    onnx::ValueInfoProto* v = input ? g_->add_input() : g_->add_output();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    t->mutable_shape()->add_dim()->set_dim_param("batch");
    if (width > 0) t->mutable_shape()->add_dim()->set_dim_value(width);
  }

 private:
  onnx::GraphProto* g_;
  onnx::NodeProto* last_ = nullptr;
};

}  // namespace

void write_onnx(const ExportOptions& o) {
  const checkpoint::Meta meta = checkpoint::verify(o.checkpoint);
  const checkpoint::Contents c = checkpoint::read(o.checkpoint, -1);
  const config::Config cfg = config::parse(meta.config, o.checkpoint, {}, 1);
  if (!algos::algorithm(cfg.algo).onnx_export)
    throw InputError(o.checkpoint + ": export --onnx writes the actors of algo " +
                     algos::algorithm_names([](const algos::Algorithm& a) { return a.onnx_export; }) +
                     "; this checkpoint was trained with algo " + cfg.algo + " (gmi_drl eval serves it)");
  const envs::EnvSpec spec = envs::env_spec(cfg.env.name, config::env_overrides(cfg));
  const nn::ActorCriticLayout L(algos::policy_spec(cfg, spec));
  if (L.shared())
    throw InputError(o.checkpoint + ": export --onnx writes actors of their own hidden layers; this policy shares "
                                    "them with its critic (policy.shared_hidden; gmi_drl eval serves it)");
  if (!L.action_nvec.empty())
    throw InputError(o.checkpoint + ": export --onnx writes Discrete and Box policies; " + spec.name +
                     " has a MultiDiscrete action space (gmi_drl eval serves it)");
  if (c.state.params.size() != L.num_params)
    throw InputError(o.checkpoint + ": /policy/params does not match the policy of its config");
  const std::vector<float>& P = c.state.params;

  onnx::ModelProto model;
  model.set_ir_version(onnx::IR_VERSION);
  model.set_producer_name("gmi_drl");
  model.set_producer_version(GMI_DRL_VERSION);
  model.set_doc_string("actor of " + o.checkpoint + " (" + spec.name + "): raw observations in, the policy's "
                       "deterministic action out");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(o.opset);
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"env", spec.name}, {"checkpoint", o.checkpoint}, {"iteration", std::to_string(meta.iteration)},
           {"env_steps", std::to_string(meta.env_steps)}}) {
    auto* m = model.add_metadata_props();
    m->set_key(k);
    m->set_value(v);
  }
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("gmi_drl_actor");
  GraphBuilder b(g);
  const int od = spec.obs_dim;
  b.value(true, "obs", onnx::TensorProto::FLOAT, od);

  // Observation normalisation as in training: clip((x - mean) / sqrt(var + 1e-8), -c, c).
  std::string x = "obs";
  if (cfg.section<algos::PpoConfig>().normalize_obs) {
    const std::vector<double>& s = c.state.obs_rms;  // [mean | var | count]
    std::vector<float> mean(od), std(od);
    for (int k = 0; k < od; ++k) mean[k] = float(s[k]), std[k] = float(std::sqrt(s[od + k] + 1e-8));
    x = b.node("Sub", {x, b.constant("obs_mean", mean, {od})}, "obs_centered");
    x = b.node("Div", {x, b.constant("obs_std", std, {od})}, "obs_scaled");
    const float clip = float(cfg.section<algos::PpoConfig>().obs_clip);
    x = b.node("Clip", {x, b.constant("obs_clip_lo", {-clip}, {}), b.constant("obs_clip_hi", {clip}, {})},
               "obs_normalized");
  }
  // The actor MLP: W_l is stored column-major out x in, i.e. row-major [in][out]: Gemm(x, W, b).
  const auto& layers = L.actor.layers;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const nn::Layer& ly = layers[l];
    const std::vector<float> W(P.begin() + ly.w, P.begin() + ly.w + std::size_t(ly.in) * ly.out);
    const std::vector<float> bias(P.begin() + ly.b, P.begin() + ly.b + ly.out);
    const std::string tag = "actor_" + std::to_string(l);
    x = b.node("Gemm", {x, b.constant(tag + "_W", W, {ly.in, ly.out}), b.constant(tag + "_b", bias, {ly.out})},
               tag + "_linear");
    if (l + 1 == layers.size()) break;
    switch (L.actor.act) {
      case nn::Activation::Tanh: x = b.node("Tanh", {x}, tag + "_tanh"); break;
      case nn::Activation::Relu: x = b.node("Relu", {x}, tag + "_relu"); break;
      case nn::Activation::Elu:
        x = b.node("Elu", {x}, tag + "_elu");
        b.attr("alpha", 1.0f);
        break;
    }
  }
  if (L.continuous()) {
    b.node("Identity", {x}, "action");
    b.value(false, "action", onnx::TensorProto::FLOAT, L.act_dim);
    if (cfg.section<algos::PpoConfig>().clip_actions) {
      const std::string lo = b.constant("act_low", spec.act_low, {L.act_dim});
      const std::string hi = b.constant("act_high", spec.act_high, {L.act_dim});
      b.node("Max", {b.node("Min", {x, hi}, "action_below_high"), lo}, "env_action");
    } else {
      b.node("Identity", {x}, "env_action");
    }
    b.value(false, "env_action", onnx::TensorProto::FLOAT, L.act_dim);
  } else {
    b.node("Identity", {x}, "logits");
    b.value(false, "logits", onnx::TensorProto::FLOAT, L.num_actions);
    b.node("ArgMax", {x}, "action");
    b.attr("axis", std::int64_t(1));
    b.attr("keepdims", std::int64_t(0));
    b.value(false, "action", onnx::TensorProto::INT64, 0);
  }
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw Error(std::string("export: the ONNX model does not pass onnx::checker: ") + e.what());
  }
  std::ofstream f(o.onnx, std::ios::binary);
  if (!f || !model.SerializeToOstream(&f)) throw InputError("--onnx " + o.onnx + ": cannot write");
  spdlog::info("wrote {}: actor of {} ({}; {} -> {} {}), opset {}{}", o.onnx, o.checkpoint, spec.name, od,
               L.continuous() ? L.act_dim : L.num_actions, L.continuous() ? "means" : "logits", o.opset,
               cfg.section<algos::PpoConfig>().normalize_obs ? ", observation normalisation included" : "");
}

}  // namespace gmi::tools::detail
