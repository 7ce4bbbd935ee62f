#include "nn/layers/container.h"

namespace anvil::nn {

void ModuleListBase::add(const std::string& name, Ptr m) {
  ANVIL_CHECK(m != nullptr, type_name(), ": cannot add a null module (at position ", modules_.size(), ")");
  add_child(name, m);
  modules_.push_back(std::move(m));
}

const ModuleListBase::Ptr& ModuleListBase::operator[](size_t index) const {
  ANVIL_CHECK(index < modules_.size(), type_name(), ": index ", index, " is out of range for ", modules_.size(),
              " modules");
  return modules_[index];
}

Sequential::Sequential(std::initializer_list<Ptr> modules) : ModuleListBase("Sequential") {
  for (const Ptr& m : modules) push_back(m);
}

Sequential::Sequential(const std::vector<Ptr>& modules) : ModuleListBase("Sequential") {
  for (const Ptr& m : modules) push_back(m);
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor out = x;
  for (const Ptr& m : *this) out = m->forward(out);
  return out;
}

Tensor Sequential::forward_inputs(const std::vector<Tensor>& inputs) {
  if (inputs.size() == 1) return forward(inputs[0]);
  ANVIL_CHECK(!empty(), "Sequential: ", inputs.size(), " inputs given to an empty Sequential (it passes one through)");
  Tensor out;
  bool first = true;
  for (const Ptr& m : *this) {
    out = first ? m->forward_inputs(inputs) : m->forward(out);
    first = false;
  }
  return out;
}

ModuleList::ModuleList(std::initializer_list<Ptr> modules) : ModuleListBase("ModuleList") {
  for (const Ptr& m : modules) push_back(m);
}

ModuleList::ModuleList(const std::vector<Ptr>& modules) : ModuleListBase("ModuleList") {
  for (const Ptr& m : modules) push_back(m);
}

}  // namespace anvil::nn
