"""Prints what Meson needs to build bagua_torch._C against this interpreter's torch, one value a
line: include directories (';'-separated), library directory, _GLIBCXX_USE_CXX11_ABI, the three
_PYBIND11_* ABI values, the install directory (platlib). Same paths as
torch.utils.cpp_extension.include_paths() / library_paths() for a CPU build."""
import os
import sysconfig

import torch

root = os.path.dirname(torch.__file__)
include = os.path.join(root, "include")
print(";".join([include, os.path.join(include, "torch", "csrc", "api", "include")]))
print(os.path.join(root, "lib"))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(torch._C._PYBIND11_COMPILER_TYPE)
print(torch._C._PYBIND11_STDLIB)
print(torch._C._PYBIND11_BUILD_ABI)
print(sysconfig.get_path("platlib"))
