"""Stand-in for torch.testing._internal.common_cuda: this runner tests the CPU only."""
TEST_CUDA = False
