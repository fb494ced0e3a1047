// Eigenvalues of mixing matrices, for the spectral gap 1 - |lambda_2|, which
// sets how fast gossip averaging converges (consensus error shrinks like
// |lambda_2|^t).
//
// Dense and O(n^3): meant for up to a few hundred peers (a 256-node matrix
// takes well under a second). No system library is needed.
#pragma once

#include <vector>

#include "gossip/topology/mixing.h"

namespace murmur::gossip {

// All eigenvalues of a symmetric matrix, largest first (cyclic Jacobi).
std::vector<double> symmetric_eigenvalues(const Matrix& w);

// Spectral radius by Gelfand's formula, rho = lim ||A^k||^(1/k), with k
// doubling by repeated squaring (normalised at each step). For any square
// matrix; accurate to about 1e-12.
double spectral_radius(const Matrix& a);

// The stationary vector of a column-stochastic matrix: W pi = pi,
// sum(pi) = 1. Needs W irreducible (a strongly connected graph).
std::vector<double> perron_vector(const Matrix& w);

// |lambda_2|: the largest eigenvalue modulus once the eigenvalue 1 is
// removed. Symmetric matrices use Jacobi; others (column-stochastic push-sum
// matrices) use the spectral radius of W - pi 1^T, whose spectrum is W's
// with 1 replaced by 0. A disconnected graph gives 1.
double second_eigenvalue_modulus(const Matrix& w);

inline double spectral_gap(const Matrix& w) { return 1.0 - second_eigenvalue_modulus(w); }

}  // namespace murmur::gossip
