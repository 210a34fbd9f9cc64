// Copyright 2026 The gVisor Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
)

// MaxDelayedAck is the longest delay TCPDelayedAckOption accepts: RFC 9293,
// section 3.8.6.3, asks that an ACK not be delayed by 0.5 s or more.
const MaxDelayedAck = 500 * time.Millisecond

// delayedAck lets an interactive connection send its ACK with its reply.
//
// Without it the endpoint acknowledges each batch of segments it processes
// at once, so a request that the application answers a few microseconds
// later costs two segments: a bare ACK and the reply. Like Linux's
// "pingpong" mode (tcp_event_data_sent, tcp_send_delayed_ack), an endpoint
// that has sent data less than delay after data arrived counts as
// interactive; it then holds the ACK for less than two full segments up to
// delay, and whatever it sends next carries it. If the timer fires, the
// application is not answering promptly: the ACK leaves, and the endpoint
// acknowledges at once again until it next answers in time.
//
// Out-of-order data, a FIN and two or more full segments are acknowledged
// at once as before (RFC 9293, section 3.8.6.3; RFC 5681, section 4.2). A
// connection that only receives never answers, so a bulk receiver's ACKs
// are not delayed.
type delayedAck struct {
	// delay is the longest an ACK may wait; zero turns delaying off. It is
	// TCPDelayedAckOption when the sender was created.
	delay time.Duration

	// pingpong is set when the endpoint answered data within delay.
	pingpong bool

	// armed is set while an ACK is owed and timer runs for it; deadline
	// is when it must leave.
	armed    bool
	deadline tcpip.MonotonicTime

	// lastData is when the last segment carrying data in sequence
	// arrived.
	lastData tcpip.MonotonicTime

	// timer is made the first time an ACK is delayed.
	timer tcpip.Timer
}

// delayAckLocked reports whether the ACK owed for the segments just
// processed may wait for data to carry it, arming the timer if so.
//
// +checklocks:e.mu
func (e *Endpoint) delayAckLocked() bool {
	d := &e.dack
	if d.delay == 0 || !d.pingpong || e.EndpointState() != StateEstablished {
		return false
	}
	if len(e.rcv.pendingRcvdSegments) != 0 || e.snd.MaxSentAck.Size(e.rcv.RcvNxt) >= 2*seqnum.Size(e.amss) {
		return false
	}
	if d.armed {
		return true
	}
	d.armed = true
	d.deadline = e.stack.Clock().NowMonotonic().Add(d.delay)
	if e.wakeLazily {
		// Arming a timer earlier than the network poller's next wake-up
		// starts an idle thread to watch it; the processor sleeps or
		// yields right after (TCPLazyWakeOption), and its thread sees
		// the timer then.
		sync.BeginWakeSuppression()
		defer sync.EndWakeSuppression()
	}
	if d.timer == nil {
		d.timer = e.stack.Clock().AfterFunc(d.delay, timerHandler(e, e.delayedAckExpired))
	} else {
		d.timer.Reset(d.delay)
	}
	return true
}

// ackSentLocked records that a segment acknowledging everything received
// has been sent at now, carrying data or not: no ACK is owed any more.
//
// +checklocks:e.mu
func (e *Endpoint) ackSentLocked(data bool, now tcpip.MonotonicTime) {
	d := &e.dack
	if d.armed {
		d.armed = false
		d.timer.Stop()
	}
	if data && d.delay > 0 && now.Sub(d.lastData) < d.delay {
		d.pingpong = true
	}
}

// delayedAckExpired sends the ACK that no data carried in time, and makes
// the endpoint acknowledge at once until it next answers promptly.
//
// +checklocks:e.mu
func (e *Endpoint) delayedAckExpired() tcpip.Error {
	d := &e.dack
	if !d.armed {
		return nil
	}
	// A timer that fired while an ACK was being sent may find another one
	// armed since, due later.
	if now := e.stack.Clock().NowMonotonic(); now.Before(d.deadline) {
		d.timer.Reset(d.deadline.Sub(now))
		return nil
	}
	d.armed = false
	d.pingpong = false
	if e.EndpointState().connected() && e.rcv.RcvNxt != e.snd.MaxSentAck {
		e.snd.sendAck()
	}
	return nil
}

// cleanup stops the timer.
func (d *delayedAck) cleanup() {
	if d.timer != nil {
		d.timer.Stop()
	}
	d.armed = false
}
