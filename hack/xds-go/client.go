package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	// Registers the xds:/// resolver and the xDS balancers; the bootstrap is
	// read from GRPC_XDS_BOOTSTRAP(_CONFIG) in this process's environment.
	_ "google.golang.org/grpc/xds"
)

// A test harness that forgets us must not leave us running.
const maxLifetime = 15 * time.Minute

type command struct {
	ID    int64        `json:"id"`
	Call  *callCommand `json:"call,omitempty"`
	Close string       `json:"close,omitempty"`
}

type callCommand struct {
	Target    string            `json:"target"`
	Method    string            `json:"method"`
	TimeoutMs int64             `json:"timeoutMs"`
	Headers   map[string]string `json:"headers"`
}

type answer struct {
	ID      int64    `json:"id"`
	OK      bool     `json:"ok"`
	Backend *string  `json:"backend,omitempty"`
	Code    string   `json:"code,omitempty"`
	Message string   `json:"message,omitempty"`
	Ms      *float64 `json:"ms,omitempty"`
}

// rawCodec carries bytes as they are, passed per call: a codec registered
// globally under "proto" would replace the one the xDS client's own ADS
// stream needs. Its name stays "proto" so the content type is the usual one.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(*b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	*b = data.Materialize()
	return nil
}

type channels struct {
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
	// Extra options for every channel (the dial map's dialer).
	opts []grpc.DialOption
}

// dialMapEnv names the dial map: "FROM=TO,FROM=TO", IP addresses. With it, a
// channel dials a backend address FROM:PORT as TO:PORT and refuses any
// address the map does not name. It lets backends on loopback be published
// under addresses the apiserver accepts in EndpointSlices (TEST-NET-1,
// 192.0.2.x: never routed). The ADS connection itself is the xDS client's own
// and is not touched.
const dialMapEnv = "XDS_GO_DIAL_MAP"

func dialMapOptions() ([]grpc.DialOption, error) {
	spec := strings.TrimSpace(os.Getenv(dialMapEnv))
	if spec == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, pair := range strings.Split(spec, ",") {
		from, to, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || net.ParseIP(from) == nil || net.ParseIP(to) == nil {
			return nil, fmt.Errorf("%s: %q is not FROM=TO with two IP addresses", dialMapEnv, pair)
		}
		m[from] = to
	}
	var d net.Dialer
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("dial map: %q: %w", addr, err)
		}
		to, ok := m[host]
		if !ok {
			return nil, fmt.Errorf("dial map: %s is not in %s", addr, dialMapEnv)
		}
		return d.DialContext(ctx, "tcp", net.JoinHostPort(to, port))
	}
	return []grpc.DialOption{grpc.WithContextDialer(dial)}, nil
}

func (c *channels) get(target string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.conns[target]; ok {
		return cc, nil
	}
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, c.opts...)
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, err
	}
	c.conns[target] = cc
	return cc, nil
}

func (c *channels) close(target string) error {
	c.mu.Lock()
	cc, ok := c.conns[target]
	delete(c.conns, target)
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("no channel to %s", target)
	}
	return cc.Close()
}

func (c *channels) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, cc := range c.conns {
		_ = cc.Close()
		delete(c.conns, t)
	}
}

func runClient(in io.Reader, out io.Writer) error {
	time.AfterFunc(maxLifetime, func() {
		fmt.Fprintf(os.Stderr, "xds-go client: ran %v, the most it may; exiting\n", maxLifetime)
		os.Exit(3)
	})
	o := newJSONOut(out)
	dialOpts, err := dialMapOptions()
	if err != nil {
		return err
	}
	chans := &channels{conns: map[string]*grpc.ClientConn{}, opts: dialOpts}
	var running sync.WaitGroup
	o.write(map[string]bool{"ready": true})
	err = lines(in, func(line []byte) error {
		var cmd command
		if err := json.Unmarshal(line, &cmd); err != nil {
			o.write(answer{ID: cmd.ID, Code: "InvalidArgument", Message: "not a command: " + err.Error()})
			return nil
		}
		switch {
		case cmd.Call != nil:
			running.Add(1)
			go func() {
				defer running.Done()
				o.write(doCall(chans, cmd.ID, cmd.Call))
			}()
		case cmd.Close != "":
			// Calls still under way on it end as a closed channel's calls do (Canceled).
			if err := chans.close(cmd.Close); err != nil {
				o.write(answer{ID: cmd.ID, Code: "NotFound", Message: err.Error()})
			} else {
				o.write(answer{ID: cmd.ID, OK: true})
			}
		default:
			o.write(answer{ID: cmd.ID, Code: "InvalidArgument", Message: "a command has call or close"})
		}
		return nil
	})
	// Calls still running end by their own deadlines.
	running.Wait()
	chans.closeAll()
	return err
}

func doCall(chans *channels, id int64, c *callCommand) answer {
	start := time.Now()
	ms := func() *float64 {
		v := float64(time.Since(start).Microseconds()) / 1000
		return &v
	}
	if c.Method == "" {
		c.Method = "/echo.Echo/Call"
	}
	if c.TimeoutMs <= 0 {
		c.TimeoutMs = 5000
	}
	cc, err := chans.get(c.Target)
	if err != nil {
		return answer{ID: id, Code: "InvalidArgument", Message: err.Error(), Ms: ms()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(c.TimeoutMs)*time.Millisecond)
	defer cancel()
	if len(c.Headers) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.New(c.Headers))
	}
	req, reply := []byte{}, []byte(nil)
	err = cc.Invoke(ctx, c.Method, &req, &reply, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		// Invoke answers status errors; status.Convert names anything else Unknown.
		s := status.Convert(err)
		return answer{ID: id, Code: s.Code().String(), Message: s.Message(), Ms: ms()}
	}
	backend := string(reply)
	return answer{ID: id, OK: true, Backend: &backend, Ms: ms()}
}
