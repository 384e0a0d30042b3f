package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// allowedMarker is what every answer must contain: the review was allowed.
var allowedMarker = []byte(`"allowed":true`)

// requestTimeout bounds one request on a connection, so a stuck server
// fails the run instead of hanging it.
const requestTimeout = 30 * time.Second

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat,
// which Linux fixes at 100 for user space.
const clockTicks = 100

// latencySummary is a set of latency percentiles in milliseconds.
type latencySummary struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// loadReport is what "load" prints on stdout, as one JSON object.
type loadReport struct {
	URL         string `json:"url"`
	Connections int    `json:"connections"`
	// Seconds is the measured window, after the warm-up.
	Seconds float64 `json:"seconds"`
	// Requests is how many requests were measured (those that started and
	// ended inside the window).
	Requests          int            `json:"requests"`
	RequestsPerSecond float64        `json:"requestsPerSecond"`
	LatencyMs         latencySummary `json:"latencyMs"`
	// Failures counts answers that were not 200 with "allowed":true and
	// requests that failed on the connection, warm-up included.
	Failures     int    `json:"failures"`
	FirstFailure string `json:"firstFailure,omitempty"`
	// Reconnects counts connections opened again after the server or an
	// error closed one.
	Reconnects int `json:"reconnects"`
	// LoadCPU is the generator's own CPU time (user and system) per second
	// of the window: 1 means it kept one core busy.
	LoadCPU float64 `json:"loadCpu"`
	// ServerCPU is the same for the process named by -server-pid, all its
	// threads together.
	ServerCPU *float64 `json:"serverCpu,omitempty"`
}

// loadOptions are the flags of "load".
type loadOptions struct {
	target      *url.URL
	caFile      string
	bodyFile    string
	connections int
	warmup      time.Duration
	duration    time.Duration
	requests    int
	serverPid   int
}

func parseLoadOptions(args []string) (loadOptions, error) {
	flags := flag.NewFlagSet("load", flag.ContinueOnError)
	rawURL := flags.String("url", "", "https URL to POST to")
	caFile := flags.String("ca", "", "PEM file of the CA that signed the server's certificate")
	bodyFile := flags.String("body", "", "file with the request body (an AdmissionReview)")
	connections := flags.Int("connections", 16, "keep-alive connections, one request in flight on each")
	warmup := flags.Duration("warmup", time.Second, "time to send before measuring")
	duration := flags.Duration("duration", 5*time.Second, "time to measure (ignored with -requests)")
	requests := flags.Int("requests", 0, "measure this many requests instead of a duration")
	serverPid := flags.Int("server-pid", 0, "process whose CPU time to report over the window")
	if err := flags.Parse(args); err != nil {
		return loadOptions{}, err
	}
	if flags.NArg() > 0 {
		return loadOptions{}, fmt.Errorf("unexpected arguments: %v", flags.Args())
	}
	target, err := url.Parse(*rawURL)
	if err != nil || target.Scheme != "https" || target.Host == "" {
		return loadOptions{}, fmt.Errorf("-url must be an https URL: current value is %q", *rawURL)
	}
	switch {
	case *caFile == "":
		return loadOptions{}, errors.New("-ca is required")
	case *bodyFile == "":
		return loadOptions{}, errors.New("-body is required")
	case *connections < 1:
		return loadOptions{}, fmt.Errorf("-connections must be at least 1: current value is %d", *connections)
	case *warmup < 0:
		return loadOptions{}, fmt.Errorf("-warmup must not be negative: current value is %s", *warmup)
	case *requests < 0:
		return loadOptions{}, fmt.Errorf("-requests must not be negative: current value is %d", *requests)
	case *requests == 0 && *duration <= 0:
		return loadOptions{}, fmt.Errorf("-duration must be positive: current value is %s", *duration)
	}
	return loadOptions{
		target:      target,
		caFile:      *caFile,
		bodyFile:    *bodyFile,
		connections: *connections,
		warmup:      *warmup,
		duration:    *duration,
		requests:    *requests,
		serverPid:   *serverPid,
	}, nil
}

// connection is one keep-alive HTTP/1.1 connection over TLS, with one
// request in flight at a time.
type connection struct {
	address    string
	config     *tls.Config
	conn       *tls.Conn
	reader     *bufio.Reader
	body       bytes.Buffer
	dials      int
	failures   int
	first      string
	latencies  []time.Duration
	lastFinish time.Time
}

func (c *connection) dial() error {
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	conn, err := tls.DialWithDialer(dialer, "tcp", c.address, c.config)
	if err != nil {
		return err
	}
	c.dials++
	c.conn = conn
	c.reader = bufio.NewReaderSize(conn, 16<<10)
	return nil
}

func (c *connection) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// post sends one request and reads its answer. It returns "" for a 200
// answer that allows the review, and otherwise what went wrong.
func (c *connection) post(request []byte) string {
	if c.conn == nil {
		if err := c.dial(); err != nil {
			return "dial: " + err.Error()
		}
	}
	if err := c.conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		c.close()
		return "deadline: " + err.Error()
	}
	if _, err := c.conn.Write(request); err != nil {
		c.close()
		return "write: " + err.Error()
	}
	response, err := http.ReadResponse(c.reader, nil)
	if err != nil {
		c.close()
		return "read: " + err.Error()
	}
	c.body.Reset()
	_, err = c.body.ReadFrom(response.Body)
	_ = response.Body.Close()
	if err != nil {
		c.close()
		return "read body: " + err.Error()
	}
	if response.Close {
		c.close()
	}
	if response.StatusCode != http.StatusOK {
		return fmt.Sprintf("HTTP %d: %.200s", response.StatusCode, c.body.String())
	}
	if !bytes.Contains(c.body.Bytes(), allowedMarker) {
		return fmt.Sprintf("not allowed: %.200s", c.body.String())
	}
	return ""
}

func (c *connection) fail(failure string) {
	c.failures++
	if c.first == "" {
		c.first = failure
	}
}

// cpuSeconds is the user and system CPU time of this process.
func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return math.NaN()
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano()).Seconds()
}

// processCPUSeconds is the user and system CPU time of process pid, all
// its threads, from /proc/PID/stat.
func processCPUSeconds(pid int) (float64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it do not.
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("cannot parse /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(stat[end+1:]))
	// utime and stime are fields 14 and 15; fields[0] is field 3.
	if len(fields) < 13 {
		return 0, fmt.Errorf("cannot parse /proc/%d/stat", pid)
	}
	utime, err := strconv.ParseFloat(fields[11], 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseFloat(fields[12], 64)
	if err != nil {
		return 0, err
	}
	return (utime + stime) / clockTicks, nil
}

// cpuSnapshot is the CPU time of the generator and of the server at one
// moment.
type cpuSnapshot struct {
	at     time.Time
	load   float64
	server float64
}

func snapshot(serverPid int) (cpuSnapshot, error) {
	s := cpuSnapshot{at: time.Now(), load: cpuSeconds()}
	if serverPid > 0 {
		server, err := processCPUSeconds(serverPid)
		if err != nil {
			return s, err
		}
		s.server = server
	}
	return s, nil
}

// percentile is the nearest-rank percentile p (0 to 1) of sorted values, in
// milliseconds.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(p*float64(len(sorted)))) - 1
	rank = max(0, min(rank, len(sorted)-1))
	return float64(sorted[rank]) / float64(time.Millisecond)
}

// runLoad sends the body to the URL over -connections keep-alive
// connections, each POSTing it again as soon as the answer is read, first
// for -warmup, then for -duration (or -requests requests), and prints a
// loadReport as JSON.
func runLoad(args []string) error {
	options, err := parseLoadOptions(args)
	if err != nil {
		return err
	}
	caPem, err := os.ReadFile(options.caFile)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPem) {
		return fmt.Errorf("no certificate in %s", options.caFile)
	}
	body, err := os.ReadFile(options.bodyFile)
	if err != nil {
		return err
	}
	request := []byte(fmt.Sprintf(
		"POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: crpeer-load\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		options.target.RequestURI(), options.target.Host, len(body),
	))
	request = append(request, body...)
	address := options.target.Host
	if options.target.Port() == "" {
		address = net.JoinHostPort(options.target.Hostname(), "443")
	}
	config := &tls.Config{
		RootCAs:    roots,
		ServerName: options.target.Hostname(),
		NextProtos: []string{"http/1.1"},
	}

	connections := make([]*connection, options.connections)
	for i := range connections {
		connections[i] = &connection{address: address, config: config}
		if err := connections[i].dial(); err != nil {
			return fmt.Errorf("connecting to %s: %w", address, err)
		}
	}
	measureStart := time.Now().Add(options.warmup)
	measureEnd := measureStart.Add(options.duration)
	var tickets atomic.Int64
	var workers sync.WaitGroup
	for _, c := range connections {
		workers.Add(1)
		go func() {
			defer workers.Done()
			defer c.close()
			for {
				started := time.Now()
				measured := !started.Before(measureStart)
				if options.requests > 0 {
					if measured && tickets.Add(1) > int64(options.requests) {
						return
					}
				} else if !started.Before(measureEnd) {
					return
				}
				failure := c.post(request)
				finished := time.Now()
				if failure != "" {
					c.fail(failure)
				}
				if measured && (options.requests > 0 || !finished.After(measureEnd)) {
					c.latencies = append(c.latencies, finished.Sub(started))
					c.lastFinish = finished
				}
			}
		}()
	}

	time.Sleep(time.Until(measureStart))
	before, err := snapshot(options.serverPid)
	if err != nil {
		return err
	}
	if options.requests == 0 {
		time.Sleep(time.Until(measureEnd))
	} else {
		workers.Wait()
	}
	after, err := snapshot(options.serverPid)
	if err != nil {
		return err
	}
	workers.Wait()

	report := loadReport{URL: options.target.String(), Connections: options.connections}
	var latencies []time.Duration
	end := measureEnd
	if options.requests > 0 {
		end = measureStart
	}
	for _, c := range connections {
		latencies = append(latencies, c.latencies...)
		report.Failures += c.failures
		if report.FirstFailure == "" {
			report.FirstFailure = c.first
		}
		report.Reconnects += c.dials - 1
		if options.requests > 0 && c.lastFinish.After(end) {
			end = c.lastFinish
		}
	}
	slices.Sort(latencies)
	window := end.Sub(measureStart).Seconds()
	report.Seconds = window
	report.Requests = len(latencies)
	report.RequestsPerSecond = float64(len(latencies)) / window
	report.LatencyMs = latencySummary{
		P50: percentile(latencies, 0.50),
		P90: percentile(latencies, 0.90),
		P99: percentile(latencies, 0.99),
		Max: percentile(latencies, 1),
	}
	cpuWindow := after.at.Sub(before.at).Seconds()
	report.LoadCPU = (after.load - before.load) / cpuWindow
	if options.serverPid > 0 {
		server := (after.server - before.server) / cpuWindow
		report.ServerCPU = &server
	}
	return json.NewEncoder(os.Stdout).Encode(report)
}
