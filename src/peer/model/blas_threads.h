// The CPU models' BLAS threads. Many peers share few cores, so murmur-peer
// runs OpenBLAS with one thread unless MURMUR_BLAS_THREADS says otherwise.
// OpenBLAS's thread count is process-wide: call these before training, from
// one thread.
#pragma once

namespace murmur::peer::model {

// openblas_set_num_threads(n); n >= 1.
void set_blas_threads(int n);

// MURMUR_BLAS_THREADS as a positive integer, or 1 when unset;
// std::invalid_argument naming the variable and its value otherwise.
int blas_threads_from_environment();

}  // namespace murmur::peer::model
