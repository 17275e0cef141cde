package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

const frameSize = 1 << 20

// fetch, set in a frame's length, asks the sink to send that many bytes
// instead of receiving them.
const fetch = 1 << 63

// sendFrame sends one frame and waits for its ack, so the clock covers
// delivery, not a write into a socket buffer.
func sendFrame(w io.Writer, r io.Reader, payload []byte) error {
	if err := binary.Write(w, binary.BigEndian, uint64(len(payload))); err != nil {
		return err
	}
	if _, err := w.Write(payload); err != nil {
		return err
	}
	var ack [1]byte
	_, err := io.ReadFull(r, ack[:])
	return err
}

// fetchFrame asks for len(buf) bytes and reads them all.
func fetchFrame(w io.Writer, r io.Reader, buf []byte) error {
	if err := binary.Write(w, binary.BigEndian, fetch|uint64(len(buf))); err != nil {
		return err
	}
	_, err := io.ReadFull(r, buf)
	return err
}

// BenchmarkServeThroughput is BenchmarkConnectThroughput of govern/egress
// through the real binary, as the gateway runs it: a separate process on a
// Unix socket, the destination a server in a network namespace at a
// private address the configuration opens (no test hook). Each op moves one
// frame directly over TCP and one through a CONNECT tunnel, interleaved,
// and reports the per-frame medians and their ratio, and the proxy's CPU
// per MB tunnelled.
//
//   - upload, download: the client on the proxy's socket itself, sending
//     frames or fetching them.
//   - bridged_upload, bridged_download: the path a sandboxed command's
//     bytes take, the client on TCP loopback to a bridge process (the
//     sandbox's egress bridge: relay.Run to the proxy's socket), which also
//     reports its CPU per MB. Four parties where the direct path has two.
func BenchmarkServeThroughput(b *testing.B) {
	requireRoot(b)
	ns, n := netnsHost(b)
	server := fmt.Sprintf("10.213.%d.2:9000", n)
	sink := exec.Command("ip", "netns", "exec", ns, os.Args[0])
	sink.Env = append(os.Environ(), "EGRESSPROXY_TEST_HELPER=sink", "EGRESSPROXY_ECHO_ADDR="+server)
	out, err := sink.StdoutPipe()
	assert.NilError(b, err)
	sink.Stderr = os.Stderr
	assert.NilError(b, sink.Start())
	b.Cleanup(func() { _ = sink.Process.Kill(); _ = sink.Wait() })
	l, err := bufio.NewReader(out).ReadString('\n')
	assert.NilError(b, err)
	assert.Equal(b, l, "listening\n")

	p := startProxyProc(b, fmt.Sprintf(`{"allow": [%q], "allowed_private_cidrs": ["10.213.%d.0/29"]}`, server, n))
	assert.Equal(b, p.line(b), "ready")
	bridge := exec.Command(os.Args[0])
	bridge.Env = append(os.Environ(), "EGRESSPROXY_TEST_HELPER=bridge", "EGRESSPROXY_SOCKET="+p.socket)
	bout, err := bridge.StdoutPipe()
	assert.NilError(b, err)
	bridge.Stderr = os.Stderr
	assert.NilError(b, bridge.Start())
	b.Cleanup(func() { _ = bridge.Process.Kill(); _ = bridge.Wait() })
	baddr, err := bufio.NewReader(bout).ReadString('\n')
	assert.NilError(b, err)
	baddr = strings.TrimSpace(baddr)

	for _, bridged := range []bool{false, true} {
		for _, down := range []bool{false, true} {
			name := map[bool]string{false: "upload", true: "download"}[down]
			if bridged {
				name = "bridged_" + name
			}
			b.Run(name, func(b *testing.B) {
				network, addr, bridgePid := "unix", p.socket, 0
				if bridged {
					network, addr, bridgePid = "tcp", baddr, bridge.Process.Pid
				}
				serveThroughput(b, server, network, addr, down, p.cmd.Process.Pid, bridgePid)
			})
		}
	}
}

// serveThroughput interleaves direct and tunnelled frames to server, the
// tunnel a CONNECT on network/addr; proxyPid's (and bridgePid's, if not
// 0) CPU is reported per MB tunnelled.
func serveThroughput(b *testing.B, server, network, addr string, down bool, proxyPid, bridgePid int) {
	direct, err := net.Dial("tcp", server)
	assert.NilError(b, err)
	b.Cleanup(func() { direct.Close() })
	tun, err := net.Dial(network, addr)
	assert.NilError(b, err)
	b.Cleanup(func() { tun.Close() })
	_, err = io.WriteString(tun, connectReq(server))
	assert.NilError(b, err)
	tr := bufio.NewReader(tun)
	resp, err := http.ReadResponse(tr, &http.Request{Method: http.MethodConnect})
	assert.NilError(b, err)
	assert.Equal(b, resp.StatusCode, http.StatusOK)

	payload := make([]byte, frameSize)
	frame := func(w io.Writer, r io.Reader) error {
		if down {
			return fetchFrame(w, r, payload)
		}
		return sendFrame(w, r, payload)
	}
	var ds, ts []time.Duration
	b.SetBytes(2 * frameSize)
	cpu0 := cpuTime(b, proxyPid)
	var bcpu0 time.Duration
	if bridgePid != 0 {
		bcpu0 = cpuTime(b, bridgePid)
	}
	for b.Loop() {
		start := time.Now()
		if err := frame(direct, direct); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := frame(tun, tr); err != nil {
			b.Fatal(err)
		}
		ds, ts = append(ds, mid.Sub(start)), append(ts, time.Since(mid))
	}
	// The proxy's own CPU per MB moved: what the tunnel costs the host,
	// whatever else the machine is doing.
	mb := float64(len(ts)) * frameSize / 1e6
	cpu := cpuTime(b, proxyPid) - cpu0
	b.ReportMetric(float64(cpu.Microseconds())/mb, "proxy_cpu_us/MB")
	if bridgePid != 0 {
		cpu := cpuTime(b, bridgePid) - bcpu0
		b.ReportMetric(float64(cpu.Microseconds())/mb, "bridge_cpu_us/MB")
	}
	md, mt := median(ds), median(ts)
	b.ReportMetric(frameSize/1e6/md.Seconds(), "p50_direct_MB/s")
	b.ReportMetric(frameSize/1e6/mt.Seconds(), "p50_tunnel_MB/s")
	b.ReportMetric(md.Seconds()/mt.Seconds(), "p50_ratio")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// cpuTime is the user and system time of pid so far, from /proc (clock
// ticks of 10 ms: enough over a benchmark's gigabytes).
func cpuTime(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	assert.NilError(b, err)
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, err := strconv.ParseInt(f[11], 10, 64)
	assert.NilError(b, err)
	stime, err := strconv.ParseInt(f[12], 10, 64)
	assert.NilError(b, err)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
