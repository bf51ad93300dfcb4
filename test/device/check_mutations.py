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
 ("staged input read before its copy finished", "lib/mc/staging_pool.cpp",
  """  BAGUA_TRY(copy_in(0, src, bytes));
  return finish();""",
  """  return copy_in(0, src, bytes);"""),
 ("stage_out without synchronize", "lib/mc/staging_pool.cpp",
  """  BAGUA_TRY(staged.copy_out(dst, 0, bytes));
  return staged.finish();""",
  """  return staged.copy_out(dst, 0, bytes);"""),
 ("staged copy without waiting for the ready event", "lib/mc/staging_pool.cpp",
  """  if (ready_pending_) {""", """  if (false) {"""),
 ("staging allocating on every call", "lib/mc/staging_pool.cpp",
  """  if (slot->bytes < bytes) {""", """  if (true) {"""),
 ("the device codec's encodes copied out without synchronize", "lib/core/device_codecs.cpp",
  """    const Status s = device_.synchronize(stream_);
    for (const Queued""","""    const Status s = BAGUA_SUCCESS;
    for (const Queued"""),
 ("bucket mark_ready without its event", "lib/core/bucket_comm.cpp",
  """  if (t.ready_event != nullptr) BAGUA_TRY(device_->record_event(""",
  """  if (false) BAGUA_TRY(device_->record_event("""),
 ("bucket pack without waiting for a tensor's event", "lib/core/bucket_comm.cpp",
  """    BAGUA_TRY(device_->wait_event(t.ready_event));
""", ""),
 ("bucket pack without synchronize", "lib/core/bucket_comm.cpp",
  """  BAGUA_TRY(staged.finish());
  *data = staged.host();""", """  *data = staged.host();"""),
 ("bucket unpack without synchronize", "lib/core/bucket_comm.cpp",
  """  BAGUA_TRY(staged.finish());
  staged.release();""", """  staged.release();"""),
 ("nonblocking copy-in without waiting", "lib/core/nonblocking.cpp",
  """  BAGUA_TRY(staged.fill(call.src, bytes));""",
  """  BAGUA_TRY(staged.copy_in(0, call.src, bytes));"""),
 ("nonblocking without the start event", "lib/core/nonblocking.cpp",
  """  return staged->mark_ready(cuda_stream_of(call.comm));""", """  return BAGUA_SUCCESS;"""),
 ("copy_and_wait without waiting", "lib/mc/memory.cpp",
  """  BAGUA_TRY(device.copy(dst, src, bytes, stream));
  return device.synchronize(stream);""",
  """  return device.copy(dst, src, bytes, stream);"""),
 ("device encoders without residuals (sign)", "test/device/emulated_device.cpp",
  """  params.residual = host_view(params.residual);
  launch(stream, [=]() { return k->encode(""",
  """  params.residual = nullptr;
  launch(stream, [=]() { return k->encode("""),
 ("exact ring on device memory", "lib/core/select.cpp",
  """  return best_row(family, wire, bytes, Memory::cuda) != nullptr;""","""  return wire == Wire::exact || best_row(family, wire, bytes, Memory::cuda) != nullptr;"""),
 ("async averaging's copy in without waiting", "lib/core/async_average.cpp",
  """  return staged_.fill(buf_, count_ * dtype_size(dtype_));""",
  """  return staged_.copy_in(0, buf_, count_ * dtype_size(dtype_));"""),
 ("async averaging's copy back without waiting", "lib/core/async_average.cpp",
  """  return stage_out(staged_, buf_, count_ * dtype_size(dtype_));""",
  """  return staged_.copy_out(buf_, 0, count_ * dtype_size(dtype_));"""),
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
