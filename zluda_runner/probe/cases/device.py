"""Init, versions, entry-point lookup, devices, peers, error naming, dark-API tables."""

from __future__ import annotations

from zluda_runner.probe.cases.base import (
    CUDA_ERROR_NOT_SUPPORTED,
    Case,
    NotApplicable,
    Setup,
    collector,
    expect,
)

CASES: list[Case] = []
init = collector(CASES, "init")
device = collector(CASES, "device")
peer = collector(CASES, "peer")
error = collector(CASES, "error")

ATTR_MAX_THREADS, ATTR_WARP, ATTR_SMS, ATTR_CC_MAJOR, ATTR_CC_MINOR = 1, 10, 16, 75, 76
CU_AD_FORMAT_FLOAT = 0x20
CUDART_INTERFACE = bytes.fromhex("6bd5fb6c5bf4e74a8987d93912fd9df9")  # {6BD5FB6C-5BF4-E74A-...}


@init("cuInit", "cuInit(0)")
def case_init(s: Setup) -> str | None:
    s.init()
    return None


@init("driver_version", "driver version")
def case_driver_version(s: Setup) -> str:
    v = s.ffi.new("int *")
    s.d.call("cuDriverGetVersion", v)
    expect(v[0] > 0, f"driver version {v[0]} is not positive")
    return f"driver version {v[0] // 1000}.{v[0] % 1000 // 10} ({v[0]})"


@init("get_proc_address", "cuGetProcAddress_v2 finds cuInit")
def case_get_proc_address(s: Setup) -> str | None:
    pfn, status = s.ffi.new("void **"), s.ffi.new("int *")
    s.d.call("cuGetProcAddress", b"cuInit", pfn, 12000, 0, status)
    expect(pfn[0] != s.ffi.NULL, "cuGetProcAddress_v2 gave a null pointer for cuInit")
    return None


@init("export_table", "cuGetExportTable(CUDART_INTERFACE), the table cudart needs")
def case_export_table(s: Setup) -> str | None:
    s.init()
    table = s.ffi.new("const void **")
    guid = s.ffi.new("CUuuid *")
    s.ffi.memmove(guid.bytes, CUDART_INTERFACE, 16)
    s.d.call("cuGetExportTable", table, guid)
    expect(table[0] != s.ffi.NULL, "null export table")
    return None


@device("count", "device count", "init.cuInit")
def case_device_count(s: Setup) -> str:
    n = s.device_count()
    expect(n > 0, "no device (count 0)")
    return f"{n} device(s)"


@device("get", "device handle", "init.cuInit")
def case_device_get(s: Setup) -> str:
    return f"device 0 is handle {s.device()}"


@device("name", "device name", "device.get")
def case_device_name(s: Setup) -> str:
    buf = s.ffi.new("char[]", 256)
    s.d.call("cuDeviceGetName", buf, 256, s.device())
    name = str(s.ffi.string(buf).decode(errors="replace"))
    expect(bool(name), "empty device name")
    return name


@device("attributes", "device attributes", "device.get")
def case_device_attributes(s: Setup) -> str:
    dev = s.device()
    got = {}
    for label, attr in (
        ("cc_major", ATTR_CC_MAJOR),
        ("cc_minor", ATTR_CC_MINOR),
        ("sms", ATTR_SMS),
        ("warp", ATTR_WARP),
        ("max_threads", ATTR_MAX_THREADS),
    ):
        v = s.ffi.new("int *")
        s.d.call("cuDeviceGetAttribute", v, attr, dev)
        got[label] = v[0]
    expect(got["warp"] > 0 and got["max_threads"] > 0, f"implausible attributes {got}")
    return f"compute capability {got['cc_major']}.{got['cc_minor']}, {got['sms']} SMs, warp {got['warp']}"


@device("compute_capability", "cuDeviceComputeCapability", "device.get")
def case_compute_capability(s: Setup) -> str:
    major, minor = s.ffi.new("int *"), s.ffi.new("int *")
    s.d.call("cuDeviceComputeCapability", major, minor, s.device())
    expect(major[0] > 0, f"compute capability {major[0]}.{minor[0]}")
    return f"{major[0]}.{minor[0]}"


@device("uuid", "device UUID", "device.get")
def case_device_uuid(s: Setup) -> str:
    uuid = s.ffi.new("CUuuid *")
    s.d.call("cuDeviceGetUuid", uuid, s.device())
    return bytes(s.ffi.buffer(uuid.bytes, 16)).hex()


@device("total_mem", "device memory", "device.get")
def case_device_total_mem(s: Setup) -> str:
    size = s.ffi.new("size_t *")
    s.d.call("cuDeviceTotalMem", size, s.device())
    expect(size[0] > 0, "total memory 0")
    return f"{size[0] / 2**30:.1f} GiB"


@device("pci_bus_id", "PCI bus id and back", "device.get")
def case_pci_bus_id(s: Setup) -> str:
    buf = s.ffi.new("char[]", 64)
    s.d.call("cuDeviceGetPCIBusId", buf, 64, s.device())
    back = s.ffi.new("CUdevice *")
    s.d.call("cuDeviceGetByPCIBusId", back, buf)
    expect(back[0] == s.device(), "cuDeviceGetByPCIBusId names another device")
    return str(s.ffi.string(buf).decode(errors="replace"))


@device("texture_1d_width", "max 1D linear texture width", "device.get")
def case_tex1d_width(s: Setup) -> str:
    width = s.ffi.new("size_t *")
    s.d.call("cuDeviceGetTexture1DLinearMaxWidth", width, CU_AD_FORMAT_FLOAT, 1, s.device())
    expect(width[0] > 0, "width 0")
    return f"{width[0]} elements"


@device("exec_affinity", "execution affinity support query", "device.get")
def case_exec_affinity(s: Setup) -> str:
    v = s.ffi.new("int *")
    s.d.call("cuDeviceGetExecAffinitySupport", v, 0, s.device())  # CU_EXEC_AFFINITY_TYPE_SM_COUNT
    return f"SM-count affinity {'supported' if v[0] else 'not supported'}"


@device("flush_rdma", "flush GPUDirect RDMA writes", "device.get")
def case_flush_rdma(s: Setup) -> None:
    s.context()
    s.d.call("cuFlushGPUDirectRDMAWrites", 0, 100)  # current context, to owner
    return None


@peer("can_access", "peer access query", "device.count")
def case_peer_access(s: Setup) -> str:
    dev = s.device()
    other = 1 if s.device_count() > 1 else dev
    can = s.ffi.new("int *")
    s.d.call("cuDeviceCanAccessPeer", can, dev, other)
    return f"device {dev} -> {other}: {'yes' if can[0] else 'no'}"


@peer("p2p_attribute", "P2P attribute query", "device.count")
def case_p2p_attribute(s: Setup) -> str:
    if s.device_count() < 2:
        raise NotApplicable("one device: no peer to ask about")
    v = s.ffi.new("int *")
    s.d.call("cuDeviceGetP2PAttribute", v, 1, 0, 1)  # CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK
    return f"performance rank {v[0]}"


@peer("context_access", "enable / disable peer access between contexts", "device.count")
def case_ctx_peer(s: Setup) -> str:
    if s.device_count() < 2:
        raise NotApplicable("one device: no peer context")
    s.context()
    ctx = s.ffi.new("CUcontext *")
    s.d.call("cuDevicePrimaryCtxRetain", ctx, 1)
    s.d.call("cuCtxEnablePeerAccess", ctx[0], 0)
    s.d.call("cuCtxDisablePeerAccess", ctx[0])
    return "device 0 <-> 1"


@error("name", "error name lookup")
def case_error_name(s: Setup) -> str:
    text = s.ffi.new("const char **")
    s.d.call("cuGetErrorName", CUDA_ERROR_NOT_SUPPORTED, text)
    name = s.ffi.string(text[0]).decode() if text[0] != s.ffi.NULL else ""
    expect(name == "CUDA_ERROR_NOT_SUPPORTED", f"801 is named {name!r}")
    return name


@error("string", "error description lookup")
def case_error_string(s: Setup) -> str:
    text = s.ffi.new("const char **")
    s.d.call("cuGetErrorString", CUDA_ERROR_NOT_SUPPORTED, text)
    expect(text[0] != s.ffi.NULL, "no description for 801")
    return str(s.ffi.string(text[0]).decode(errors="replace"))
