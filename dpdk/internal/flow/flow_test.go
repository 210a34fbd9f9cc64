package flow

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/packetio/packetio"
)

func types(f Flow) string {
	var s []string
	for _, it := range f.Items {
		s = append(s, it.Type.String())
	}
	return strings.Join(s, "/")
}

func filter(m ...packetio.Match) packetio.SteeringFilter { return packetio.SteeringFilter{Match: m} }

func TestBuildItemOrderAndMasks(t *testing.T) {
	mac := [6]byte{2, 0, 0, 0, 0, 1}
	q1 := []uint16{0}
	for _, tc := range []struct {
		name  string
		f     packetio.SteeringFilter
		want  []string // item types per flow
		check func(t *testing.T, fl []Flow)
	}{
		{"mac", filter(packetio.MatchDstMAC(mac)), []string{"eth"}, func(t *testing.T, fl []Flow) {
			if fl[0].Items[0].DstMAC != mac || fl[0].Items[0].DstMACMask[5] != 0xff || fl[0].Items[0].EtherTypeMask != 0 {
				t.Fatalf("%+v", fl[0].Items[0])
			}
		}},
		{"ethertype", filter(packetio.MatchEtherType(0x88b5)), []string{"eth"}, func(t *testing.T, fl []Flow) {
			if it := fl[0].Items[0]; it.EtherType != 0x88b5 || it.EtherTypeMask != 0xffff {
				t.Fatalf("%+v", it)
			}
		}},
		{"vlan and ethertype", filter(packetio.MatchVLAN(100), packetio.MatchEtherType(0x88b5)), []string{"eth/vlan"}, func(t *testing.T, fl []Flow) {
			v := fl[0].Items[1]
			if v.TCI != 100 || v.TCIMask != 0x0fff || v.EtherType != 0x88b5 || fl[0].Items[0].EtherTypeMask != 0 {
				t.Fatalf("%+v", fl[0].Items)
			}
		}},
		{"udp port: both families", filter(packetio.MatchDstPort(packetio.IPProtoUDP, 9000)...), []string{"eth/ipv4/udp", "eth/ipv6/udp"}, func(t *testing.T, fl []Flow) {
			u := fl[0].Items[2]
			if u.DstPort != 9000 || u.DstPortMask != 0xffff || u.SrcPortMask != 0 || fl[0].Items[1].Proto != 17 || fl[0].Items[1].ProtoMask != 0xff {
				t.Fatalf("%+v", fl[0].Items)
			}
		}},
		{"ipv4 prefix and tcp src port", filter(append(packetio.MatchSrcPort(packetio.IPProtoTCP, 22), packetio.MatchDstIP(netip.MustParsePrefix("10.1.2.3/24")))...), []string{"eth/ipv4/tcp"}, func(t *testing.T, fl []Flow) {
			ip := fl[0].Items[1]
			if [4]byte(ip.Dst[:4]) != [4]byte{10, 1, 2, 0} || [4]byte(ip.DstMask[:4]) != [4]byte{255, 255, 255, 0} || ip.SrcMask != ([16]byte{}) {
				t.Fatalf("%+v", ip)
			}
			if fl[0].Items[2].SrcPort != 22 {
				t.Fatalf("%+v", fl[0].Items[2])
			}
		}},
		{"ipv6 address", filter(packetio.MatchSrcIP(netip.MustParsePrefix("2001:db8::1/128"))), []string{"eth/ipv6"}, func(t *testing.T, fl []Flow) {
			if fl[0].Items[1].SrcMask[15] != 0xff || fl[0].Items[1].Src[0] != 0x20 {
				t.Fatalf("%+v", fl[0].Items[1])
			}
		}},
		{"alternatives", filter(append(packetio.MatchDstPort(packetio.IPProtoUDP, 1), packetio.Match{Kind: packetio.MatchKindDstPort, IPProto: packetio.IPProtoUDP, Port: 2}, packetio.MatchEtherType(0x0800))...), []string{"eth/ipv4/udp", "eth/ipv4/udp"}, nil},
		{"vlan then ip", filter(append(packetio.MatchDstPort(packetio.IPProtoTCP, 80), packetio.MatchVLAN(7))...), []string{"eth/vlan/ipv4/tcp", "eth/vlan/ipv6/tcp"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl, err := BuildFilter(tc.f, q1, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fl {
				got = append(got, types(f))
				if f.RSS() || len(f.Queues) != 1 {
					t.Fatal("one queue must be the QUEUE action")
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("flows %v, want %v", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, fl)
			}
		})
	}
}

func TestBuildRefusesWhatItCannotExpress(t *testing.T) {
	for name, f := range map[string]packetio.SteeringFilter{
		"mixed families":         filter(packetio.MatchSrcIP(netip.MustParsePrefix("10.0.0.0/8")), packetio.MatchDstIP(netip.MustParsePrefix("::1/128"))),
		"ethertype contradicts":  filter(packetio.MatchEtherType(0x86dd), packetio.MatchSrcIP(netip.MustParsePrefix("10.0.0.0/8"))),
		"arp with ip":            filter(packetio.MatchEtherType(0x0806), packetio.MatchIPProto(6)),
		"ports of a non-tcp/udp": filter(packetio.Match{Kind: packetio.MatchKindDstPort, IPProto: 47, Port: 1}),
		"port without protocol":  filter(packetio.Match{Kind: packetio.MatchKindDstPort, Port: 9}),
	} {
		if _, err := BuildFilter(f, []uint16{0}, nil); !errors.Is(err, packetio.ErrUnsupported) {
			t.Errorf("%s: err = %v, want ErrUnsupported", name, err)
		}
	}
	if _, err := Build(packetio.Rule{}, nil, nil); !errors.Is(err, packetio.ErrUnsupported) {
		t.Error("no queues accepted")
	}
}

func TestRSSWithSeveralQueuesAndDefaultMAC(t *testing.T) {
	mac := [6]byte{2, 1, 1, 1, 1, 1}
	fl, err := BuildFilter(filter(packetio.MatchEtherType(0x88b5)), []uint16{0, 1, 2}, &mac)
	if err != nil {
		t.Fatal(err)
	}
	if !fl[0].RSS() || fl[0].Items[0].DstMAC != mac {
		t.Fatalf("%s", fl[0])
	}
	if !strings.Contains(fl[0].String(), "rss queues [0 1 2]") {
		t.Fatal(fl[0].String())
	}
	if fl, err := BuildFilter(packetio.SteeringFilter{Promiscuous: true}, []uint16{0}, nil); err != nil || fl != nil {
		t.Fatal("promiscuous compiles to no flows")
	}
}

// fakeEngine records calls and refuses as configured.
type fakeEngine struct {
	validateErr, createErr, isolateErr error
	failCreateAt                       int // 1-based; 0 = never
	created, flushed, validated        int
	log                                []string
}

func (e *fakeEngine) Isolate() error { e.log = append(e.log, "isolate"); return e.isolateErr }
func (e *fakeEngine) Validate(f Flow) error {
	e.validated++
	e.log = append(e.log, "validate")
	return e.validateErr
}
func (e *fakeEngine) Create(f Flow) error {
	e.log = append(e.log, "create")
	if e.createErr != nil && (e.failCreateAt == 0 || e.failCreateAt == e.created+1) {
		return e.createErr
	}
	e.created++
	return nil
}
func (e *fakeEngine) Flush() error {
	e.flushed++
	e.created = 0
	e.log = append(e.log, "flush")
	return nil
}

func TestInstall(t *testing.T) {
	fl, err := BuildFilter(filter(packetio.MatchDstPort(packetio.IPProtoUDP, 53)...), []uint16{0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &fakeEngine{}
	if err := Install(e, fl); err != nil || e.created != 2 || strings.Join(e.log, ",") != "validate,validate,create,create" {
		t.Fatalf("install: %v, log %v", err, e.log)
	}

	nosys := &Error{Op: "validate", Errno: 38, Type: 1, Message: "Function not implemented"}
	for name, e := range map[string]*fakeEngine{
		"no flow engine (ENOSYS)":     {validateErr: nosys},
		"item not supported":          {validateErr: &Error{Op: "validate", Errno: 95, Type: 13, Message: "item not supported"}},
		"create after validate fails": {createErr: &Error{Op: "create", Errno: 17, Type: 2}},
		"second create fails":         {createErr: &Error{Op: "create", Errno: 12}, failCreateAt: 2},
	} {
		err := Install(e, fl)
		if !errors.Is(err, packetio.ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
		var fe *Error
		if !errors.As(err, &fe) {
			t.Errorf("%s: the driver's reason is lost: %v", name, err)
		}
		if e.created != 0 {
			t.Errorf("%s: %d flows left installed", name, e.created)
		}
	}
	if err := Isolate(&fakeEngine{isolateErr: nosys}); !errors.Is(err, packetio.ErrUnsupported) {
		t.Errorf("isolate: %v", err)
	}
	if !strings.Contains((&Error{Op: "create"}).Error(), "no reason given") {
		t.Error("empty message")
	}
}
