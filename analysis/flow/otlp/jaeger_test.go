package otlp

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightrec/flightrec/analysis/flow"
)

// jaegerVersion is the module version of Jaeger v2 (the jaegertracing/jaeger
// module tags its v2 releases v1.x) the interop test runs.
const jaegerVersion = "v1.76.0"

// jaegerBinary returns a Jaeger all-in-one binary: $FLIGHTREC_JAEGER, the
// cached build, or a new build from the module proxy (inside Jaeger's own
// module directory, where its replace directives apply), cached for the
// next run. CI builds it ahead (see .ci/run) so the test does not wait.
func jaegerBinary(t *testing.T) string {
	if p := os.Getenv("FLIGHTREC_JAEGER"); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no cache directory for the Jaeger binary: %v", err)
	}
	bin := filepath.Join(cache, "flightrec", "jaeger-"+jaegerVersion)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", "github.com/jaegertracing/jaeger@"+jaegerVersion).Output()
	if err != nil {
		t.Skipf("cannot download Jaeger %s from the module proxy: %v", jaegerVersion, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download: %v: %s", err, out)
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+".tmp", "./cmd/jaeger")
	build.Dir = mod.Dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			t.Skipf("building Jaeger %s took over 8 minutes; build it ahead: cd %s && go build -o %s ./cmd/jaeger", jaegerVersion, mod.Dir, bin)
		}
		t.Fatalf("building Jaeger %s: %v\n%s", jaegerVersion, err, out)
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// jaegerTrace is a trace as Jaeger's query API returns it.
type jaegerTrace struct {
	Data []struct {
		Spans []struct {
			SpanID        string `json:"spanID"`
			OperationName string `json:"operationName"`
			ProcessID     string `json:"processID"`
			References    []struct {
				RefType string `json:"refType"`
				SpanID  string `json:"spanID"`
			} `json:"references"`
			Tags []struct {
				Key   string `json:"key"`
				Value any    `json:"value"`
			} `json:"tags"`
		} `json:"spans"`
		Processes map[string]struct {
			ServiceName string `json:"serviceName"`
		} `json:"processes"`
	} `json:"data"`
}

// TestJaeger exports ex5 to a real Jaeger v2 all-in-one (memory storage,
// loopback only), over OTLP/HTTP and OTLP/gRPC, and reads the traces back
// through Jaeger's query API: the PUT trace has A's span as root, B's as
// its child and C's as B's, each in its node's service.
func TestJaeger(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Jaeger")
	}
	bin := jaegerBinary(t)
	httpAddr, grpcAddr, queryAddr, queryGRPC := freePort(t), freePort(t), freePort(t), freePort(t)
	config := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: %s
    grpc:
      endpoint: %s
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
      grpc:
        endpoint: %s
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`, queryAddr, queryGRPC, httpAddr, grpcAddr)
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("jaeger output:\n%s", logs.String())
		}
	}()
	get := func(path string, v any) (int, error) {
		resp, err := http.Get("http://" + queryAddr + path)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, nil
		}
		return resp.StatusCode, json.NewDecoder(resp.Body).Decode(v)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var services any
		if code, err := get("/api/services", &services); err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Jaeger's query API did not come up in 60 s")
		}
		time.Sleep(200 * time.Millisecond)
	}

	for _, c := range []struct{ ex, endpoint string }{{"ex5", "http://" + httpAddr}, {"ex1", "grpc://" + grpcAddr}} {
		var ins []flow.Input
		files, _ := filepath.Glob(filepath.Join("../testdata/examples", c.ex, "[A-Z].txt"))
		for _, f := range files {
			ins = append(ins, flow.FileInput(f))
		}
		e, err := NewExporter(c.endpoint)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		if _, err := flow.Merge(ins, nil, func(tr *flow.Trace) error {
			ids = append(ids, hex.EncodeToString(tr.IDs(tr.Spans()).Trace))
			return e.Add(context.Background(), tr)
		}); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The first trace: ex5's PUT (A -> B -> C), ex1's PUT (A -> B -> A).
		var tr jaegerTrace
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, err := get("/api/traces/"+ids[0], &tr)
			if err == nil && code == http.StatusOK && len(tr.Data) == 1 && len(tr.Data[0].Spans) == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: trace %s not in Jaeger after 30 s (last: %d %v %+v)", c.ex, ids[0], code, err, tr)
			}
			time.Sleep(200 * time.Millisecond)
		}
		d := tr.Data[0]
		parent := map[string]string{} // service -> parent's service
		service := map[string]string{}
		for _, s := range d.Spans {
			service[s.SpanID] = d.Processes[s.ProcessID].ServiceName
		}
		for _, s := range d.Spans {
			p := "-"
			for _, r := range s.References {
				if r.RefType == "CHILD_OF" {
					p = service[r.SpanID]
				}
			}
			parent[service[s.SpanID]+" "+s.OperationName] = p
		}
		want := map[string]map[string]string{
			"ex5": {"A PUT": "-", "B PutKeyValueCommand": "A", "C PutKeyValueCommand": "B"},
			"ex1": {"A PUT": "-", "B PutKeyValueCommand": "A", "A RSP_PutKeyValueCommand": "B"},
		}[c.ex]
		if fmt.Sprint(parent) != fmt.Sprint(want) {
			t.Errorf("%s in Jaeger: span -> parent service %v, want %v", c.ex, parent, want)
		}
	}
}
