package gpufields

// XID codes' meanings for dcgm-exporter's err_msg label, for the codes an inference fleet meets
// most; written from NVIDIA's public XID catalog (docs.nvidia.com/deploy/xid-errors). The
// exporter's own table (internal/pkg/collector/xid_errors.go) covers every code; where a
// code is not here the probe writes UnknownXID, as the exporter does past its table's end.
var xidMessages = map[uint64]string{
	0:   "No Error",
	13:  "Graphics engine exception",
	31:  "GPU memory page fault",
	43:  "GPU stopped processing",
	45:  "Preemptive cleanup after earlier errors",
	48:  "Double-bit ECC error",
	61:  "Internal micro-controller breakpoint or warning",
	62:  "Internal micro-controller halt",
	63:  "ECC page retirement or row remapping recorded",
	64:  "ECC page retirement or row remapping recording failed",
	68:  "Video decoder exception",
	69:  "Graphics engine class error",
	74:  "NVLink error",
	79:  "GPU has fallen off the bus",
	92:  "High single-bit ECC error rate",
	94:  "Contained ECC error",
	95:  "Uncontained ECC error",
	119: "GSP RPC timeout",
	120: "GSP error",
}

// UnknownXID is err_msg for a code without a known meaning (dcgm-exporter's text).
const UnknownXID = "Unknown Error"

// XIDMessage is the err_msg of an XID code.
func XIDMessage(code uint64) string {
	if m, ok := xidMessages[code]; ok {
		return m
	}
	return UnknownXID
}
