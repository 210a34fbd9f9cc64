module github.com/packetio/packetio

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0
	github.com/google/gopacket v1.1.19
	github.com/mdlayher/genetlink v1.4.0
	github.com/mdlayher/netlink v1.9.0
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/mdlayher/socket v0.6.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
)
