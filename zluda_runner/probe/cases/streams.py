"""Streams (incl. the default stream, priorities, attributes, host callbacks, memory ops) and events.

Events need no created stream: they are recorded on the default (NULL) stream when stream
creation fails, which the case's detail says.
"""

from __future__ import annotations

from typing import Any

from zluda_runner.probe.cases.base import (
    CU_STREAM_NON_BLOCKING,
    Case,
    N,
    Setup,
    collector,
    expect,
)

CASES: list[Case] = []
stream = collector(CASES, "stream")
event = collector(CASES, "event")
CU_STREAM_ATTRIBUTE_PRIORITY = 8
CU_STREAM_WAIT_VALUE_GEQ = 0
CU_STREAM_CAPTURE_MODE_RELAXED = 2


@stream("create_destroy", "stream create / destroy", "context.primary")
def case_stream_create(s: Setup) -> None:
    s.context()
    st = s.ffi.new("CUstream *")
    s.d.call("cuStreamCreate", st, CU_STREAM_NON_BLOCKING)
    s.d.call("cuStreamDestroy", st[0])


@stream("default_stream", "synchronize / query the default (NULL) stream", "context.primary")
def case_default_stream(s: Setup) -> None:
    s.context()
    s.d.call("cuStreamSynchronize", s.ffi.NULL)
    s.d.call("cuStreamQuery", s.ffi.NULL)


@stream("sync_query", "stream synchronize / query", "stream.create_destroy")
def case_stream_sync_query(s: Setup) -> None:
    st = s.stream()
    s.d.call("cuStreamSynchronize", st)
    s.d.call("cuStreamQuery", st)


@stream("priority", "stream with a priority; priority and flags read back", "context.primary")
def case_stream_priority(s: Setup) -> str:
    s.context()
    st = s.ffi.new("CUstream *")
    s.d.call("cuStreamCreateWithPriority", st, CU_STREAM_NON_BLOCKING, 0)
    prio, flags = s.ffi.new("int *"), s.ffi.new("unsigned int *")
    s.d.call("cuStreamGetPriority", st[0], prio)
    s.d.call("cuStreamGetFlags", st[0], flags)
    s.d.call("cuStreamDestroy", st[0])
    expect(flags[0] & CU_STREAM_NON_BLOCKING == CU_STREAM_NON_BLOCKING, f"flags {flags[0]} lost non-blocking")
    return f"priority {prio[0]}, flags {flags[0]:#x}"


@stream("context_and_id", "stream's context and id", "stream.create_destroy")
def case_stream_ctx(s: Setup) -> str:
    st = s.stream()
    ctx = s.ffi.new("CUcontext *")
    s.d.call("cuStreamGetCtx", st, ctx)
    expect(ctx[0] == s.context(), "the stream reports another context")
    sid = s.ffi.new("unsigned long long *")
    s.d.call("cuStreamGetId", st, sid)
    return f"id {sid[0]}"


@stream("attributes", "stream attributes get / set / copy", "stream.create_destroy")
def case_stream_attributes(s: Setup) -> None:
    st = s.stream()
    value = s.ffi.new("CUstreamAttrValue *")
    s.d.call("cuStreamGetAttribute", st, CU_STREAM_ATTRIBUTE_PRIORITY, value)
    s.d.call("cuStreamSetAttribute", st, CU_STREAM_ATTRIBUTE_PRIORITY, value)
    other = s.ffi.new("CUstream *")
    s.d.call("cuStreamCreate", other, CU_STREAM_NON_BLOCKING)
    s.d.call("cuStreamCopyAttributes", other[0], st)
    s.d.call("cuStreamDestroy", other[0])


def _host_callback(s: Setup, name: str, ctype: str, make_args: Any) -> None:
    st = s.stream_or_default()
    ran: list[int] = []
    cb = s.ffi.callback(ctype, make_args(ran))
    s.keep.append(cb)
    if name == "cuLaunchHostFunc":
        s.d.call(name, st, cb, s.ffi.NULL)
    else:
        s.d.call(name, st, cb, s.ffi.NULL, 0)
    s.d.call("cuStreamSynchronize", st)
    expect(ran == [1], f"the host function ran {len(ran)} times, not once")


@stream("host_func", "host function on a stream", "context.primary")
def case_host_func(s: Setup) -> None:
    _host_callback(s, "cuLaunchHostFunc", "void(void *)", lambda ran: lambda _data: ran.append(1))


@stream("callback", "stream callback", "context.primary")
def case_stream_callback(s: Setup) -> None:
    _host_callback(
        s,
        "cuStreamAddCallback",
        "void(CUstream, CUresult, void *)",
        lambda ran: lambda _st, _status, _data: ran.append(1),
    )


@stream("wait_event", "stream waits on an event", "context.primary")
def case_wait_event(s: Setup) -> None:
    st = s.stream_or_default()
    ev = s.event()
    s.d.call("cuEventRecord", ev, s.ffi.NULL)
    s.d.call("cuStreamWaitEvent", st, ev, 0)
    s.d.call("cuStreamSynchronize", st)
    s.d.call("cuEventDestroy", ev)


@stream("mem_ops", "stream write / wait 32-bit value", "memory.copy_roundtrip")
def case_mem_ops(s: Setup) -> None:
    st = s.stream_or_default()
    ptr = s.alloc(4)
    s.d.call("cuMemsetD32", ptr, 0, 1)
    s.d.call("cuStreamWriteValue32", st, ptr, 7, 0)
    s.d.call("cuStreamWaitValue32", st, ptr, 7, CU_STREAM_WAIT_VALUE_GEQ)
    s.d.call("cuStreamSynchronize", st)
    expect(s.download_bytes(ptr, 4) == b"\x07\x00\x00\x00", "written value not read back")


@stream("capture_state", "capture status, info and thread capture mode", "stream.create_destroy")
def case_capture_state(s: Setup) -> str:
    st = s.stream()
    status = s.ffi.new("int *")
    s.d.call("cuStreamIsCapturing", st, status)
    cid, graph = s.ffi.new("cuuint64_t *"), s.ffi.new("CUgraph *")
    deps, ndeps = s.ffi.new("const CUgraphNode **"), s.ffi.new("size_t *")
    s.d.call("cuStreamGetCaptureInfo", st, status, cid, graph, deps, ndeps)
    mode = s.ffi.new("int *", CU_STREAM_CAPTURE_MODE_RELAXED)
    s.d.call("cuThreadExchangeStreamCaptureMode", mode)
    s.d.call("cuThreadExchangeStreamCaptureMode", mode)  # and back
    expect(status[0] == 0, f"a fresh stream reports capture status {status[0]}")
    return "not capturing"


@event("record_sync", "event record / synchronize / query", "context.primary")
def case_event_record(s: Setup) -> None:
    st = s.stream_or_default()
    ev = s.event()
    s.d.call("cuEventRecord", ev, st)
    s.d.call("cuEventSynchronize", ev)
    s.d.call("cuEventQuery", ev)
    s.d.call("cuEventDestroy", ev)


@event("record_with_flags", "event record with flags", "context.primary")
def case_event_record_flags(s: Setup) -> None:
    st = s.stream_or_default()
    ev = s.event()
    s.d.call("cuEventRecordWithFlags", ev, st, 0)
    s.d.call("cuEventSynchronize", ev)
    s.d.call("cuEventDestroy", ev)


@event("elapsed_time", "event timing", "context.primary")
def case_event_timing(s: Setup) -> str:
    st = s.stream_or_default()
    start, stop = s.event(), s.event()
    s.d.call("cuEventRecord", start, st)
    ptr = s.alloc(4 * N)
    s.d.call("cuMemsetD32", ptr, 0, N)
    s.d.call("cuEventRecord", stop, st)
    s.d.call("cuEventSynchronize", stop)
    ms = s.ffi.new("float *")
    s.d.call("cuEventElapsedTime", ms, start, stop)
    expect(ms[0] >= 0.0, f"negative elapsed time {ms[0]}")
    return f"{ms[0]:.3f} ms"
