// einsum: parse the equation into integer labels per operand dim, take
// diagonals of repeated labels, sum labels no one else needs, then contract
// operands pairwise (one batched matmul per pair) and permute to the output's order.
#include "core/ops/einsum.h"

#include <algorithm>
#include <array>
#include <string>

#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/indexing.h"
#include "core/ops/linalg.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"

namespace anvil {

namespace {

// Labels: 'A'-'Z' are 0-25, 'a'-'z' 26-51 (so sorting them sorts as PyTorch
// does for the implicit output); the dims "..." covers are 52, 53, ...
// counted from the left of the widest "...".
constexpr int kLetters = 52;
using Labels = std::vector<int>;

struct Term {
  Labels letters_before, letters_after;  // around "..."
  bool ellipsis = false;
};

struct Operand {
  Tensor t;
  Labels labels;  // one per dim of t
};

[[noreturn]] void bad_equation(std::string_view eq, const std::string& why) {
  fail("einsum: invalid equation \"", std::string(eq), "\": ", why);
}

Term parse_term(std::string_view eq, std::string_view term) {
  Term r;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c == '.') {
      if (r.ellipsis || term.substr(i, 3) != "...") bad_equation(eq, "'.' outside a single \"...\" in a term");
      r.ellipsis = true;
      i += 2;
    } else if (c >= 'A' && c <= 'Z') {
      (r.ellipsis ? r.letters_after : r.letters_before).push_back(c - 'A');
    } else if (c >= 'a' && c <= 'z') {
      (r.ellipsis ? r.letters_after : r.letters_before).push_back(26 + c - 'a');
    } else {
      bad_equation(eq, std::string("unexpected character '") + c + "' (labels are letters)");
    }
  }
  return r;
}

std::vector<std::string_view> split_terms(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// Labels of each of t's dims given its term and the widest ellipsis.
Labels operand_labels(const Term& term, int64_t ellipsis_dims, int64_t widest) {
  Labels l = term.letters_before;
  for (int64_t j = 0; j < ellipsis_dims; ++j) l.push_back(kLetters + static_cast<int>(widest - ellipsis_dims + j));
  l.insert(l.end(), term.letters_after.begin(), term.letters_after.end());
  return l;
}

// The diagonal over the dims i < j carrying the same label: they move to the
// end, merge into one dim of n*n and every (n+1)-th element is kept.
Operand take_diagonal(std::string_view eq, const Operand& op, size_t i, size_t j) {
  const int64_t n = op.t.size(static_cast<int64_t>(i));
  if (op.t.size(static_cast<int64_t>(j)) != n)
    fail("einsum: \"", std::string(eq), "\" repeats a label over dims ", i, " and ", j, " of operand ",
         detail::describe(op.t), ", which need equal sizes for a diagonal");
  Shape perm, shape;
  Labels labels;
  for (size_t d = 0; d < op.labels.size(); ++d) {
    if (d == i || d == j) continue;
    perm.push_back(static_cast<int64_t>(d));
    shape.push_back(op.t.size(static_cast<int64_t>(d)));
    labels.push_back(op.labels[d]);
  }
  perm.push_back(static_cast<int64_t>(i));
  perm.push_back(static_cast<int64_t>(j));
  shape.push_back(n * n);
  labels.push_back(op.labels[i]);
  Tensor index = arange(0.0, static_cast<double>(n * n), static_cast<double>(n + 1),
                        TensorOptions().dtype(kInt64).device(op.t.device()));
  return {index_select(op.t.permute(perm).reshape(shape), -1, index), labels};
}

Operand sum_labels(const Operand& op, const std::vector<bool>& drop) {
  Shape dims;
  Labels kept;
  for (size_t d = 0; d < op.labels.size(); ++d) {
    if (drop[d])
      dims.push_back(static_cast<int64_t>(d));
    else
      kept.push_back(op.labels[d]);
  }
  if (dims.empty()) return op;
  return {sum(op.t, dims), kept};
}

int64_t position(const Labels& l, int label) {
  return static_cast<int64_t>(std::find(l.begin(), l.end(), label) - l.begin());
}

// a's labels as a permutation of its dims, in the order `order`.
Tensor arrange(const Operand& a, const Labels& order) {
  Shape perm;
  for (int l : order) perm.push_back(position(a.labels, l));
  return a.t.permute(perm);
}

int64_t size_product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// Contracts a and b: labels in both that are needed later stay (batch),
// labels in both that are not are summed (the matmul's K), the rest stay as
// a's rows (M) and b's columns (N).
Operand contract(const Operand& a, const Operand& b, const std::array<bool, 128>& needed_later,
                 const std::vector<int64_t>& size_of) {
  Labels batch, m, k, n;
  for (int l : a.labels) {
    const bool in_b = position(b.labels, l) < static_cast<int64_t>(b.labels.size());
    (in_b ? (needed_later[l] ? batch : k) : m).push_back(l);
  }
  for (int l : b.labels)
    if (position(a.labels, l) == static_cast<int64_t>(a.labels.size())) n.push_back(l);
  // Size-1 dims broadcast: expand both to the labels' full sizes.
  auto full_sizes = [&](const Labels& order) {
    Shape s;
    for (int l : order) s.push_back(size_of[l]);
    return s;
  };
  Labels a_order = batch, b_order = batch;
  a_order.insert(a_order.end(), m.begin(), m.end());
  a_order.insert(a_order.end(), k.begin(), k.end());
  b_order.insert(b_order.end(), k.begin(), k.end());
  b_order.insert(b_order.end(), n.begin(), n.end());
  Shape a_shape = full_sizes(a_order), b_shape = full_sizes(b_order);
  Tensor ta = arrange(a, a_order), tb = arrange(b, b_order);
  ta = ta.expand(a_shape);
  tb = tb.expand(b_shape);
  const size_t nb = batch.size(), nm = m.size(), nk = k.size(), nn = n.size();
  Shape out_shape(a_shape.begin(), a_shape.begin() + static_cast<int64_t>(nb + nm));
  out_shape.insert(out_shape.end(), b_shape.begin() + static_cast<int64_t>(nb + nk), b_shape.end());
  Labels out_labels = batch;
  out_labels.insert(out_labels.end(), m.begin(), m.end());
  out_labels.insert(out_labels.end(), n.begin(), n.end());
  Tensor out;
  if (nk == 0) {
    // No summed label: a broadcast multiply, [batch, M, 1...] * [batch, 1..., N].
    Tensor ua = ta, ub = tb;
    for (size_t i = 0; i < nn; ++i) ua = ua.unsqueeze(-1);
    for (size_t i = 0; i < nm; ++i) ub = ub.unsqueeze(static_cast<int64_t>(nb));
    out = ua * ub;
  } else {
    // [batch..., M, K] @ [batch..., K, N]: groups of several M (K, N) labels
    // merge into one dim; a single label per group needs no reshape, so a
    // permuted operand reaches the matmul as a strided view, not a copy.
    const int64_t ms = size_product(a_shape, nb, nb + nm), ks = size_product(a_shape, nb + nm, nb + nm + nk),
                  ns = size_product(b_shape, nb + nk, nb + nk + nn);
    const Shape batch_sizes(a_shape.begin(), a_shape.begin() + static_cast<int64_t>(nb));
    auto as_matrices = [&](const Tensor& t, int64_t rows, int64_t cols) {
      Shape s = batch_sizes;
      s.push_back(rows);
      s.push_back(cols);
      return t.shape() == s ? t : t.reshape(s);
    };
    out = matmul(as_matrices(ta, ms, ks), as_matrices(tb, ks, ns)).reshape(out_shape);
  }
  return {out, out_labels};
}

}  // namespace

Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands) {
  std::string eq_text;
  for (char c : equation)
    if (c != ' ') eq_text.push_back(c);
  const std::string_view eq = eq_text;
  const size_t arrow = eq.find("->");
  const std::string_view lhs = eq.substr(0, arrow);
  const std::vector<std::string_view> term_texts = split_terms(lhs);
  if (term_texts.size() != operands.size())
    fail("einsum: equation \"", std::string(equation), "\" has ", term_texts.size(), " operand terms but ",
         operands.size(), " tensors were given");
  ANVIL_CHECK(!operands.empty(), "einsum: expected at least one operand");
  for (size_t i = 0; i < operands.size(); ++i)
    ANVIL_CHECK(operands[i].defined(), "einsum: operand ", i, " is undefined");
  for (size_t i = 1; i < operands.size(); ++i) {
    detail::check_same_device("einsum", {operands[0], operands[i]});
    ANVIL_CHECK(operands[i].dtype() == operands[0].dtype(), "einsum: operands must share a dtype, got ",
                detail::describe(operands[0]), " and ", detail::describe(operands[i]));
  }

  // Terms, ellipsis widths and each label's size.
  std::vector<Term> terms;
  std::vector<int64_t> ellipsis_dims(operands.size(), 0);
  int64_t widest = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    terms.push_back(parse_term(eq, term_texts[i]));
    const int64_t letters = static_cast<int64_t>(terms[i].letters_before.size() + terms[i].letters_after.size());
    const int64_t dims = operands[i].dim();
    if (terms[i].ellipsis ? dims < letters : dims != letters)
      fail("einsum: term \"", std::string(term_texts[i]), "\" of \"", std::string(equation), "\" names ", letters,
           " dims", terms[i].ellipsis ? " (plus \"...\")" : "", " but operand ", i, " is ",
           detail::describe(operands[i]));
    ellipsis_dims[i] = terms[i].ellipsis ? dims - letters : 0;
    widest = std::max(widest, ellipsis_dims[i]);
  }
  ANVIL_CHECK(kLetters + widest <= 128, "einsum: too many dims under \"...\" (", widest, ")");
  std::vector<int64_t> size_of(128, 1);
  std::array<int, 128> operand_count{};
  std::vector<Operand> ops;
  for (size_t i = 0; i < operands.size(); ++i) {
    Operand op{operands[i], operand_labels(terms[i], ellipsis_dims[i], widest)};
    for (size_t d = 0; d < op.labels.size(); ++d) {
      const int l = op.labels[d];
      const int64_t s = op.t.size(static_cast<int64_t>(d));
      for (size_t e = 0; e < d; ++e)
        if (op.labels[e] == l && op.t.size(static_cast<int64_t>(e)) != s)
          fail("einsum: \"", std::string(equation), "\" repeats a label over dims ", e, " and ", d, " of operand ", i,
               " ", detail::describe(op.t), ", which need equal sizes for a diagonal");
      if (size_of[l] != s && size_of[l] != 1 && s != 1)
        fail("einsum: \"", std::string(equation), "\": a label is used for sizes ", size_of[l], " and ", s,
             " (operand ", i, " ", detail::describe(op.t), "); sizes must match or be 1");
      if (s != 1) size_of[l] = s;
    }
    Labels unique = op.labels;
    std::sort(unique.begin(), unique.end());
    unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
    for (int l : unique) ++operand_count[l];
    ops.push_back(op);
  }

  // The output's labels.
  Labels out;
  std::array<bool, 128> in_output{};
  if (arrow == std::string_view::npos) {
    for (int64_t j = 0; j < widest; ++j) out.push_back(kLetters + static_cast<int>(j));
    std::array<int, 128> occurrences{};
    for (const Operand& op : ops)
      for (int l : op.labels) ++occurrences[l];
    for (int l = 0; l < kLetters; ++l)
      if (occurrences[l] == 1) out.push_back(l);
  } else {
    const Term t = parse_term(eq, eq.substr(arrow + 2));
    out = t.letters_before;
    if (t.ellipsis)
      for (int64_t j = 0; j < widest; ++j) out.push_back(kLetters + static_cast<int>(j));
    out.insert(out.end(), t.letters_after.begin(), t.letters_after.end());
    for (int l : out) {
      if (operand_count[l] == 0) bad_equation(eq, "an output label does not appear in any operand");
      if (in_output[l]) bad_equation(eq, "an output label appears more than once");
      in_output[l] = true;
    }
  }
  for (int l : out) in_output[l] = true;

  // Diagonals, then labels only this operand has and the output lacks.
  for (Operand& op : ops) {
    for (bool repeated = true; repeated;) {
      repeated = false;
      for (size_t i = 0; i < op.labels.size() && !repeated; ++i)
        for (size_t j = i + 1; j < op.labels.size() && !repeated; ++j)
          if (op.labels[i] == op.labels[j]) {
            op = take_diagonal(eq, op, i, j);
            repeated = true;
          }
    }
    std::vector<bool> drop(op.labels.size());
    for (size_t d = 0; d < op.labels.size(); ++d)
      drop[d] = operand_count[op.labels[d]] == 1 && !in_output[op.labels[d]];
    op = sum_labels(op, drop);
  }

  // Left to right: each contraction keeps the labels the output or a later operand needs.
  Operand acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    std::array<bool, 128> needed_later = in_output;
    for (size_t j = i + 1; j < ops.size(); ++j)
      for (int l : ops[j].labels) needed_later[l] = true;
    acc = contract(acc, ops[i], needed_later, size_of);
  }
  std::vector<bool> drop(acc.labels.size());
  for (size_t d = 0; d < acc.labels.size(); ++d) drop[d] = !in_output[acc.labels[d]];
  acc = sum_labels(acc, drop);
  return arrange(acc, out);
}

}  // namespace anvil
