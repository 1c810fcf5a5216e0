/* SPDX-License-Identifier: MIT */
/*
 * rtmixed_kernels.cu - the kernels of rtmixed.cu, built as a fatbin that is
 * linked into the program (samples/cuda/embed.S) and loaded through the
 * Driver API with cuModuleLoadData().
 *
 *   mix_step   a round of integer mixing over the Runtime API's buffer, which
 *              folds in a word of the salt table (the Driver API's buffer)
 *   mix_stir   the salt table stirred with words of the buffer, one thread a
 *              word, after mix_step on the same stream
 *
 * Integers only, so every run gives the same bits. extern "C" keeps the names
 * plain, as cuModuleGetFunction() looks them up.
 */

extern "C" __global__ void mix_step(unsigned int *a, unsigned long long n, const unsigned int *salt,
				    unsigned int salt_words, unsigned int i)
{
	unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;

	for (unsigned long long j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride)
		a[j] = a[j] * 2654435761u + salt[j % salt_words] + (unsigned int)j * (i + 1) +
		       12345u;
}

extern "C" __global__ void mix_stir(unsigned int *salt, unsigned int salt_words,
				    const unsigned int *a, unsigned long long n, unsigned int i)
{
	unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;

	if (t < salt_words)
		salt[t] = (salt[t] ^ a[(t * 4099ull + i) % n]) * 747796405u + i;
}
