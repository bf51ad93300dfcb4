#!/usr/bin/env python3
"""Mutations of the device paths that test/device/test_device_buffers.cpp must
catch: each removes one synchronisation, event or copy step (or makes one
wrong), rebuilds the emulated test, runs it at 2 ranks and prints its exit
status and failed checks, then restores the source. Run by hand from the
repository root after a change to the device paths (not in CI: it edits
sources). doc/compressed.md records the last counts.
    test/device/check_mutations.py [builddir]
"""
import os
import subprocess
import sys
M = [
 ("staging read without synchronize", "lib/core/run.cpp",
  """  BAGUA_TRY(copy_and_wait(scratch->device(), copy, call.src, bytes, cuda_stream_of(call.comm)));""",
  """  BAGUA_TRY(scratch->device().copy(copy, call.src, bytes, cuda_stream_of(call.comm)));"""),
 ("unstage without synchronize", "lib/core/run.cpp",
  """  return copy_and_wait(scratch->device(), call.dst, host.dst, call.count * dtype_size(call.dtype),""",
  """  return scratch->device().copy(call.dst, host.dst, call.count * dtype_size(call.dtype),"""),
 ("the device codec's encodes copied out without synchronize", "lib/mc/device_codecs.cpp",
  """    const Status s = device_.synchronize(stream_);
    for (const Queued""","""    const Status s = BAGUA_SUCCESS;
    for (const Queued"""),
 ("bucket mark_ready without its event", "lib/core/bucket_comm.cpp",
  """  if (t.ready_event != nullptr)
""","""  if (t.ready_event != nullptr && false)
"""),
 ("bucket unpack without synchronize", "lib/core/bucket_comm.cpp",
  """      BAGUA_TRY(device_->copy(t.ptr, place, bytes, copy_stream_));
  }
  return device_ == nullptr ? BAGUA_SUCCESS : device_->synchronize(copy_stream_);""","""      BAGUA_TRY(device_->copy(t.ptr, place, bytes, copy_stream_));
  }
  return BAGUA_SUCCESS;"""),
 ("nonblocking copy-back without synchronize", "lib/core/nonblocking.cpp",
  """  return copy_and_wait(device, call.dst, slot.host, bytes, slot.stream);""",
  """  return device.copy(call.dst, slot.host, bytes, slot.stream);"""),
 ("copy_and_wait without waiting", "lib/mc/memory.cpp",
  """  BAGUA_TRY(device.copy(dst, src, bytes, stream));
  return device.synchronize(stream);""",
  """  return device.copy(dst, src, bytes, stream);"""),
 ("nonblocking without the start event", "lib/core/nonblocking.cpp",
  """  const Status s = staging_->device().record_event((*slot)->event, cuda_stream_of(call.comm));""","""  const Status s = BAGUA_SUCCESS;"""),
 ("sign encoder without residuals", "test/device/emulated_device.cpp",
  """sign_encode_with_feedback(static_cast<const float *>(in), residual, count,""","""sign_encode_with_feedback(static_cast<const float *>(in), nullptr, count,"""),
 ("exact ring on device memory", "lib/core/select.cpp",
  """  return best_row(score_table(settings, family), wire, bytes, Memory::cuda) != nullptr;""","""  return wire == Wire::exact || best_row(score_table(settings, family), wire, bytes, Memory::cuda) != nullptr;"""),
 ("async averaging's copy in without waiting", "lib/core/async_average.cpp",
  """  return copy_and_wait(*device_, host_copy_, buf_, count_ * dtype_size(dtype_), stream_);""",
  """  return device_->copy(host_copy_, buf_, count_ * dtype_size(dtype_), stream_);"""),
 ("async averaging's copy back without waiting", "lib/core/async_average.cpp",
  """  return copy_and_wait(*device_, buf_, host_copy_, count_ * dtype_size(dtype_), stream_);""",
  """  return device_->copy(buf_, host_copy_, count_ * dtype_size(dtype_), stream_);"""),
 ("async averaging's failed copy not recorded", "lib/core/async_average.cpp",
  """    const Status s = comm_->record_stop(average_once(&stop));""",
  """    const Status s = average_once(&stop);"""),
 ("scratch allocating on every call", "lib/mc/device_scratch.cpp",
  """  if (bytes <= b.bytes) return b.p;""","""  if (bytes <= b.bytes && false) return b.p;"""),
]
root = os.getcwd() + "/"
build = root + (sys.argv[1] if len(sys.argv) > 1 else "build")
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
for name, f, old, new in M:
    src=open(root+f).read()
    if old not in src: print("NOT FOUND:", name); continue
    open(root+f,'w').write(src.replace(old,new,1))
    try:
        b=subprocess.run(["ninja", "-C", build, "test/bagua-test-device-buffers"],capture_output=True,text=True)
        if b.returncode: print(name, "BUILD FAILED", b.stdout[-500:]); continue
        r=subprocess.run(["timeout","300","mpirun","-np","2",build + "/test/bagua-test-device-buffers"],capture_output=True,text=True,env=env)
        out=r.stdout+r.stderr
        print(f"{name}: exit {r.returncode}, {out.count('FAILED:')} failed checks")
    finally:
        open(root+f,'w').write(src)
subprocess.run(["ninja", "-C", build], capture_output=True)
