module github.com/packetio/packetio

go 1.26.0

require (
	github.com/google/gopacket v1.1.19
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	golang.org/x/sys v0.50.0
)
