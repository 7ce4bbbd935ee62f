#pragma once
// The documented updates of RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, Adam and
// AdamW with amsgrad (torch.optim's pseudo-code) and Lion (the paper's), in plain doubles:
// step(p, grad) applies one update to the values p. Shared by the CPU tests
// (tests/nn/optim) and the CUDA ones (tests/nn/cuda).
#include <algorithm>
#include <cmath>

#include "tests/nn/optim/optim_test_util.h"

namespace anvil::nn::optim::test {

inline double sgn(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }

struct RefRMSprop {
  double lr, alpha, eps, wd, momentum;
  bool centered, maximize;
  Vec v, ga, buf;
  void step(Vec& p, const Vec& grad) {
    if (v.empty()) v.assign(p.size(), 0), ga.assign(p.size(), 0), buf.assign(p.size(), 0);
    for (size_t i = 0; i < p.size(); ++i) {
      double g = (maximize ? -grad[i] : grad[i]) + wd * p[i];
      v[i] = alpha * v[i] + (1 - alpha) * g * g;
      double avg;
      if (centered) {
        ga[i] = alpha * ga[i] + (1 - alpha) * g;
        avg = std::sqrt(v[i] - ga[i] * ga[i]) + eps;
      } else {
        avg = std::sqrt(v[i]) + eps;
      }
      if (momentum > 0) {
        buf[i] = momentum * buf[i] + g / avg;
        p[i] -= lr * buf[i];
      } else {
        p[i] -= lr * g / avg;
      }
    }
  }
};

struct RefAdagrad {
  double lr, lr_decay, wd, init, eps;
  bool maximize;
  Vec sum;
  int t = 0;
  void step(Vec& p, const Vec& grad) {
    if (sum.empty()) sum.assign(p.size(), init);
    ++t;
    const double clr = lr / (1 + (t - 1) * lr_decay);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = (maximize ? -grad[i] : grad[i]) + wd * p[i];
      sum[i] += g * g;
      p[i] -= clr * g / (std::sqrt(sum[i]) + eps);
    }
  }
};

// torch.optim.Adadelta: v and u (square_avg, acc_delta) start at 0.
struct RefAdadelta {
  double lr, rho, eps, wd;
  bool maximize;
  Vec v, u;
  void step(Vec& p, const Vec& grad) {
    if (v.empty()) v.assign(p.size(), 0), u.assign(p.size(), 0);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = (maximize ? -grad[i] : grad[i]) + wd * p[i];
      v[i] = rho * v[i] + (1 - rho) * g * g;
      const double delta = std::sqrt(u[i] + eps) / std::sqrt(v[i] + eps) * g;
      u[i] = rho * u[i] + (1 - rho) * delta * delta;
      p[i] -= lr * delta;
    }
  }
};

// torch.optim.Adam / AdamW with amsgrad=True: the denominator from the
// running maximum of the (uncorrected) second moments.
struct RefAMSGrad {
  double lr, b1, b2, eps, wd;
  bool decoupled, maximize;
  Vec m, v, v_max;
  int t = 0;
  void step(Vec& p, const Vec& grad) {
    if (m.empty()) m.assign(p.size(), 0), v.assign(p.size(), 0), v_max.assign(p.size(), 0);
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      double g = maximize ? -grad[i] : grad[i];
      if (decoupled)
        p[i] *= 1 - lr * wd;
      else
        g += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      v_max[i] = std::max(v_max[i], v[i]);
      p[i] -= lr / (1 - std::pow(b1, t)) * m[i] / (std::sqrt(v_max[i]) / std::sqrt(1 - std::pow(b2, t)) + eps);
    }
  }
};

struct RefAdamax {
  double lr, b1, b2, eps, wd;
  Vec m, u;
  int t = 0;
  void step(Vec& p, const Vec& grad) {
    if (m.empty()) m.assign(p.size(), 0), u.assign(p.size(), 0);
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = grad[i] + wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      u[i] = std::max(b2 * u[i], std::abs(g) + eps);
      p[i] -= lr / (1 - std::pow(b1, t)) * m[i] / u[i];
    }
  }
};

struct RefNAdam {
  double lr, b1, b2, eps, wd, psi;
  bool decoupled;
  Vec m, v;
  double mu_product = 1;
  int t = 0;
  void step(Vec& p, const Vec& grad) {
    if (m.empty()) m.assign(p.size(), 0), v.assign(p.size(), 0);
    ++t;
    const double mu = b1 * (1 - 0.5 * std::pow(0.96, t * psi));
    const double mu_next = b1 * (1 - 0.5 * std::pow(0.96, (t + 1) * psi));
    mu_product *= mu;
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i];
      if (decoupled)
        p[i] *= 1 - lr * wd;
      else
        g += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double denom = std::sqrt(v[i] / (1 - std::pow(b2, t))) + eps;
      p[i] -= lr * (1 - mu) / (1 - mu_product) * g / denom;
      p[i] -= lr * mu_next / (1 - mu_product * mu_next) * m[i] / denom;
    }
  }
};

struct RefRAdam {
  double lr, b1, b2, eps, wd;
  bool decoupled;
  Vec m, v;
  int t = 0;
  void step(Vec& p, const Vec& grad) {
    if (m.empty()) m.assign(p.size(), 0), v.assign(p.size(), 0);
    ++t;
    const double rho_inf = 2 / (1 - b2) - 1;
    const double rho_t = rho_inf - 2 * t * std::pow(b2, t) / (1 - std::pow(b2, t));
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i];
      if (decoupled)
        p[i] *= 1 - lr * wd;
      else
        g += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double m_hat = m[i] / (1 - std::pow(b1, t));
      if (rho_t > 5) {
        const double r = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
        const double adaptive = std::sqrt(1 - std::pow(b2, t)) / (std::sqrt(v[i]) + eps);
        p[i] -= lr * m_hat * r * adaptive;
      } else {
        p[i] -= lr * m_hat;
      }
    }
  }
};

struct RefLion {
  double lr, b1, b2, wd;
  bool maximize;
  Vec m;
  void step(Vec& p, const Vec& grad) {
    if (m.empty()) m.assign(p.size(), 0);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = maximize ? -grad[i] : grad[i];
      p[i] *= 1 - lr * wd;
      p[i] -= lr * sgn(b1 * m[i] + (1 - b1) * g);
      m[i] = b2 * m[i] + (1 - b2) * g;
    }
  }
};

}  // namespace anvil::nn::optim::test
