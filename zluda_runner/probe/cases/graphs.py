"""CUDA graphs: stream capture, explicit construction, instantiate, update, upload, launch."""

from __future__ import annotations

from typing import Any

from zluda_runner.probe.cases.base import Case, N, Setup, collector, expect, float_bits

CASES: list[Case] = []
graph = collector(CASES, "graph")
CU_STREAM_CAPTURE_MODE_GLOBAL = 0
CU_GRAPH_NODE_TYPE_KERNEL = 0


def _kernel_params(s: Setup, a: int, b: int, c: int) -> Any:
    p = s.ffi.new("CUDA_KERNEL_NODE_PARAMS *")
    p.func = s.function()
    p.gridDimX, p.gridDimY, p.gridDimZ = N // 256, 1, 1
    p.blockDimX, p.blockDimY, p.blockDimZ = 256, 1, 1
    p.kernelParams = s.vadd_params(a, b, c, N)
    return p


@graph("capture_launch", "stream capture -> graph launch", "launch.kernel", "stream.create_destroy")
def case_graph_capture(s: Setup) -> None:
    stream = s.stream()
    a = s.upload_floats([1.0] * N)
    c = s.alloc(4 * N)
    s.d.call("cuStreamBeginCapture", stream, CU_STREAM_CAPTURE_MODE_GLOBAL)
    s.launch_vadd(stream, a, a, c, N)
    g = s.ffi.new("CUgraph *")
    s.d.call("cuStreamEndCapture", stream, g)
    exe = s.ffi.new("CUgraphExec *")
    s.d.call("cuGraphInstantiateWithFlags", exe, g[0], 0)
    s.d.call("cuGraphLaunch", exe[0], stream)
    s.d.call("cuStreamSynchronize", stream)
    expect(s.download_floats(c, N) == [2.0] * N, "graph replay gave wrong results")
    s.d.call("cuGraphExecDestroy", exe[0])
    s.d.call("cuGraphDestroy", g[0])


@graph("build", "explicit graph: kernel, memset, memcpy, host, empty nodes; inspect", "launch.kernel")
def case_graph_build(s: Setup) -> str:
    a, b, c, want = s.vadd_inputs()
    g = s.ffi.new("CUgraph *")
    s.d.call("cuGraphCreate", g, 0)
    null = s.ffi.NULL
    memset_node = s.ffi.new("CUgraphNode *")
    mp = s.ffi.new("CUDA_MEMSET_NODE_PARAMS *")
    mp.dst, mp.pitch, mp.value, mp.elementSize, mp.width, mp.height = c, 0, float_bits(9.0), 4, N, 1
    s.d.call("cuGraphAddMemsetNode", memset_node, g[0], null, 0, mp, s.context())
    kernel_node = s.ffi.new("CUgraphNode *")
    s.d.call("cuGraphAddKernelNode", kernel_node, g[0], memset_node, 1, _kernel_params(s, a, b, c))
    empty = s.ffi.new("CUgraphNode *")
    s.d.call("cuGraphAddEmptyNode", empty, g[0], null, 0)
    s.d.call("cuGraphAddDependencies", g[0], kernel_node, empty, 1)
    ran: list[int] = []
    fn = s.ffi.callback("void(void *)", lambda _d: ran.append(1))
    s.keep.append(fn)
    hp = s.ffi.new("CUDA_HOST_NODE_PARAMS *")  # the callback is kept alive by s.keep
    hp.fn, hp.userData = fn, null
    host_node = s.ffi.new("CUgraphNode *")
    s.d.call("cuGraphAddHostNode", host_node, g[0], empty, 1, hp)
    count = s.ffi.new("size_t *")
    s.d.call("cuGraphGetNodes", g[0], null, count)
    roots = s.ffi.new("size_t *")
    s.d.call("cuGraphGetRootNodes", g[0], null, roots)
    kind = s.ffi.new("int *")
    s.d.call("cuGraphNodeGetType", kernel_node[0], kind)
    got_mp = s.ffi.new("CUDA_MEMSET_NODE_PARAMS *")
    s.d.call("cuGraphMemsetNodeGetParams", memset_node[0], got_mp)
    exe = s.ffi.new("CUgraphExec *")
    s.d.call("cuGraphInstantiateWithFlags", exe, g[0], 0)
    s.d.call("cuGraphLaunch", exe[0], null)
    s.d.call("cuStreamSynchronize", null)
    s.d.call("cuGraphExecDestroy", exe[0])
    s.d.call("cuGraphDestroy", g[0])
    expect(count[0] == 4 and roots[0] == 1, f"{count[0]} nodes / {roots[0]} roots, want 4 / 1")
    expect(kind[0] == CU_GRAPH_NODE_TYPE_KERNEL, f"kernel node has type {kind[0]}")
    expect(got_mp.value == float_bits(9.0), "memset node parameters differ")
    expect(s.download_floats(c, N) == want, "the graph's kernel gave wrong results")
    expect(ran == [1], f"the host node ran {len(ran)} times")
    return "4 nodes, 1 root"


@graph("update", "clone, upload, exec update and kernel-node parameter update", "launch.kernel")
def case_graph_update(s: Setup) -> None:
    a, b, c, want = s.vadd_inputs()
    g = s.ffi.new("CUgraph *")
    s.d.call("cuGraphCreate", g, 0)
    node = s.ffi.new("CUgraphNode *")
    s.d.call("cuGraphAddKernelNode", node, g[0], s.ffi.NULL, 0, _kernel_params(s, a, a, c))
    params = s.ffi.new("CUDA_KERNEL_NODE_PARAMS *")
    s.d.call("cuGraphKernelNodeGetParams", node[0], params)
    clone = s.ffi.new("CUgraph *")
    s.d.call("cuGraphClone", clone, g[0])
    exe = s.ffi.new("CUgraphExec *")
    s.d.call("cuGraphInstantiateWithFlags", exe, g[0], 0)
    info = s.ffi.new("CUgraphExecUpdateResultInfo *")
    s.d.call("cuGraphExecUpdate", exe[0], clone[0], info)
    s.d.call("cuGraphExecKernelNodeSetParams", exe[0], node[0], _kernel_params(s, a, b, c))
    stream = s.stream_or_default()
    s.d.call("cuGraphUpload", exe[0], stream)
    s.d.call("cuGraphLaunch", exe[0], stream)
    s.d.call("cuStreamSynchronize", stream)
    expect(s.download_floats(c, N) == want, "the updated kernel node gave wrong results")
    for name, handle in (("cuGraphExecDestroy", exe[0]), ("cuGraphDestroy", clone[0])):
        s.d.call(name, handle)
    s.d.call("cuGraphDestroyNode", node[0])
    s.d.call("cuGraphDestroy", g[0])


@graph("dot_print", "graph debug DOT output", "context.primary")
def case_graph_dot(s: Setup) -> str:
    import os
    import tempfile

    s.context()
    g = s.ffi.new("CUgraph *")
    s.d.call("cuGraphCreate", g, 0)
    node = s.ffi.new("CUgraphNode *")
    s.d.call("cuGraphAddEmptyNode", node, g[0], s.ffi.NULL, 0)
    fd, path = tempfile.mkstemp(suffix=".dot")
    os.close(fd)
    try:
        s.d.call("cuGraphDebugDotPrint", g[0], path.encode(), 0)
        size = os.path.getsize(path)
    finally:
        os.unlink(path)
    s.d.call("cuGraphDestroy", g[0])
    return f"{size} bytes of DOT"
