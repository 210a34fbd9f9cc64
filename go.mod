module github.com/packetio/packetio

go 1.26
