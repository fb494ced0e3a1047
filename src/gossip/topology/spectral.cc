#include "gossip/topology/spectral.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <utility>

#include "common/check.h"

namespace murmur::gossip {

namespace {
double frobenius(const Matrix& a) {
  double s = 0.0;
  for (int i = 0; i < a.size(); ++i) {
    for (int j = 0; j < a.size(); ++j) s += a(i, j) * a(i, j);
  }
  return std::sqrt(s);
}

void scale(Matrix& a, double f) {
  for (int i = 0; i < a.size(); ++i) {
    for (int j = 0; j < a.size(); ++j) a(i, j) *= f;
  }
}

Matrix transpose(const Matrix& a) {
  Matrix t(a.size());
  for (int i = 0; i < a.size(); ++i) {
    for (int j = 0; j < a.size(); ++j) t(j, i) = a(i, j);
  }
  return t;
}

// Solves (W - I) pi = 0 with sum(pi) = 1; nullopt when W - I has a null
// space of dimension above one (W reducible: a graph not strongly connected).
std::optional<std::vector<double>> solve_stationary(const Matrix& w) {
  const int n = w.size();
  Matrix a(n);
  std::vector<double> b(static_cast<std::size_t>(n), 0.0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) a(i, j) = w(i, j) - (i == j ? 1.0 : 0.0);
  }
  for (int j = 0; j < n; ++j) a(n - 1, j) = 1.0;  // the rows of W - I are dependent
  b[n - 1] = 1.0;
  for (int col = 0; col < n; ++col) {
    int pivot = col;
    for (int r = col + 1; r < n; ++r) {
      if (std::abs(a(r, col)) > std::abs(a(pivot, col))) pivot = r;
    }
    if (std::abs(a(pivot, col)) < 1e-12) return std::nullopt;
    if (pivot != col) {
      for (int j = 0; j < n; ++j) std::swap(a(pivot, j), a(col, j));
      std::swap(b[pivot], b[col]);
    }
    for (int r = col + 1; r < n; ++r) {
      const double f = a(r, col) / a(col, col);
      if (f == 0.0) continue;
      for (int j = col; j < n; ++j) a(r, j) -= f * a(col, j);
      b[r] -= f * b[col];
    }
  }
  std::vector<double> x(static_cast<std::size_t>(n), 0.0);
  for (int r = n - 1; r >= 0; --r) {
    double s = b[r];
    for (int j = r + 1; j < n; ++j) s -= a(r, j) * x[j];
    x[r] = s / a(r, r);
  }
  return x;
}
}  // namespace

std::vector<double> symmetric_eigenvalues(const Matrix& w) {
  const int n = w.size();
  Matrix a = w;
  const double total = frobenius(a);
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0.0;
    for (int p = 0; p < n; ++p) {
      for (int q = p + 1; q < n; ++q) off += a(p, q) * a(p, q);
    }
    if (std::sqrt(off) <= 1e-15 * total || off == 0.0) break;
    for (int p = 0; p < n; ++p) {
      for (int q = p + 1; q < n; ++q) {
        const double apq = a(p, q);
        if (std::abs(apq) < 1e-300) continue;
        // Rotation in the (p, q) plane that zeroes a(p, q) (Numerical Recipes' jacobi).
        const double theta = (a(q, q) - a(p, p)) / (2.0 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0);
        const double s = t * c;
        for (int k = 0; k < n; ++k) {
          const double akp = a(k, p);
          const double akq = a(k, q);
          a(k, p) = c * akp - s * akq;
          a(k, q) = s * akp + c * akq;
        }
        for (int k = 0; k < n; ++k) {
          const double apk = a(p, k);
          const double aqk = a(q, k);
          a(p, k) = c * apk - s * aqk;
          a(q, k) = s * apk + c * aqk;
        }
        a(p, q) = a(q, p) = 0.0;
      }
    }
  }
  std::vector<double> values(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) values[i] = a(i, i);
  std::sort(values.begin(), values.end(), std::greater<>());
  return values;
}

double spectral_radius(const Matrix& a) {
  Matrix m = a;
  double norm = frobenius(m);
  if (norm == 0.0) return 0.0;
  scale(m, 1.0 / norm);
  double log_norm = std::log(norm);  // log ||A^k||
  double k = 1.0;
  double estimate = norm;
  for (int step = 0; step < 64; ++step) {
    m = multiply(m, m);
    norm = frobenius(m);
    if (norm == 0.0) return 0.0;  // nilpotent
    scale(m, 1.0 / norm);
    log_norm = 2.0 * log_norm + std::log(norm);
    k *= 2.0;
    const double next = std::exp(log_norm / k);
    if (step >= 8 && std::abs(next - estimate) < 1e-14) return next;
    estimate = next;
  }
  return estimate;
}

std::vector<double> perron_vector(const Matrix& w) {
  auto pi = solve_stationary(w);
  MURMUR_CHECK(pi.has_value());
  return *pi;
}

double second_eigenvalue_modulus(const Matrix& w) {
  const int n = w.size();
  if (n <= 1) return 0.0;
  if (is_symmetric(w)) {
    std::vector<double> values = symmetric_eigenvalues(w);
    // Drop the eigenvalue nearest 1 (the consensus direction).
    auto perron = std::min_element(values.begin(), values.end(),
                                   [](double x, double y) { return std::abs(x - 1.0) < std::abs(y - 1.0); });
    values.erase(perron);
    double worst = 0.0;
    for (double v : values) worst = std::max(worst, std::abs(v));
    return std::min(worst, 1.0);
  }
  // Work with a column-stochastic matrix (1^T W = 1^T); a row-stochastic one
  // has the same spectrum as its transpose.
  const Matrix c = column_stochastic_error(w) <= row_stochastic_error(w) ? w : transpose(w);
  auto pi = solve_stationary(c);
  if (!pi) return 1.0;  // eigenvalue 1 is repeated
  Matrix deflated = c;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) deflated(i, j) -= (*pi)[i];
  }
  const double rho = spectral_radius(deflated);
  return rho > 1.0 - 1e-12 ? 1.0 : rho;  // rounding above 1 would read as a negative gap
}

}  // namespace murmur::gossip
