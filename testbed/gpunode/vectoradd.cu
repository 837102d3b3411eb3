// The CUDA workload of the real GPU node's vectoradd image: adds two vectors on the GPU and checks
// the sum on the host, printing what NVIDIA's vectorAdd sample prints (the suite reads
// "Test PASSED"). Built on the GPU machine with its nvcc (sm_90, static cudart).
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

__global__ void add(const float *a, const float *b, float *c, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

static void check(cudaError_t err, const char *what) {
    if (err != cudaSuccess) {
        fprintf(stderr, "Failed to %s (error code %s)!\n", what, cudaGetErrorString(err));
        exit(EXIT_FAILURE);
    }
}

int main() {
    const int n = 50000;
    const size_t bytes = n * sizeof(float);
    printf("[Vector addition of %d elements]\n", n);
    float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *c = (float *)malloc(bytes);
    for (int i = 0; i < n; ++i) {
        a[i] = rand() / (float)RAND_MAX;
        b[i] = rand() / (float)RAND_MAX;
    }
    float *da, *db, *dc;
    check(cudaMalloc(&da, bytes), "allocate device vector A");
    check(cudaMalloc(&db, bytes), "allocate device vector B");
    check(cudaMalloc(&dc, bytes), "allocate device vector C");
    printf("Copy input data from the host memory to the CUDA device\n");
    check(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice), "copy vector A from host to device");
    check(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice), "copy vector B from host to device");
    const int threads = 256, blocks = (n + threads - 1) / threads;
    printf("CUDA kernel launch with %d blocks of %d threads\n", blocks, threads);
    add<<<blocks, threads>>>(da, db, dc, n);
    check(cudaGetLastError(), "launch vectorAdd kernel");
    printf("Copy output data from the CUDA device to the host memory\n");
    check(cudaMemcpy(c, dc, bytes, cudaMemcpyDeviceToHost), "copy vector C from device to host");
    for (int i = 0; i < n; ++i) {
        if (fabsf(a[i] + b[i] - c[i]) > 1e-5f) {
            fprintf(stderr, "Result verification failed at element %d!\n", i);
            return EXIT_FAILURE;
        }
    }
    printf("Test PASSED\n");
    cudaFree(da); cudaFree(db); cudaFree(dc);
    free(a); free(b); free(c);
    printf("Done\n");
    return 0;
}
