"""Prints what Meson needs to build bagua_torch._C against this interpreter's torch (2.x), one
value a line: torch's version, its include directories (';'-separated, pybind11's among them),
its library directory, _GLIBCXX_USE_CXX11_ABI, and whether it was built with CUDA. The same
paths as torch.utils.cpp_extension.include_paths() / library_paths() for a CPU build."""
import os

import torch

root = os.path.dirname(torch.__file__)
include = os.path.join(root, "include")
print(torch.__version__.split("+")[0])
print(";".join([include, os.path.join(include, "torch", "csrc", "api", "include")]))
print(os.path.join(root, "lib"))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(int(torch.version.cuda is not None))
