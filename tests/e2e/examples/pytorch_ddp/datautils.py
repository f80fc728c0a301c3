# Vendored test data, unedited below this header (issue 23: the frameworks'
# official multi-node examples run under tony as their users run them).
# Origin: https://github.com/pytorch/examples, distributed/ddp-tutorial-series/datautils.py,
# commit 77f55b912142e11fcfdf5b530231fb9c52f181e8. BSD 3-Clause License, Copyright (c) 2017, Pytorch contributors.
# Run by tests/e2e/test_frameworks.py through torch_on_cpu.py (it needs CUDA/NCCL).
import torch
from torch.utils.data import Dataset

class MyTrainDataset(Dataset):
    def __init__(self, size):
        self.size = size
        self.data = [(torch.rand(20), torch.rand(1)) for _ in range(size)]

    def __len__(self):
        return self.size
    
    def __getitem__(self, index):
        return self.data[index]