package checkin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"leaklab.dev/bulkabort/bulk"
)

// fakeEngine answers Do with a fixed error and remembers the last document.
type fakeEngine struct {
	err error
	got any
}

func (f *fakeEngine) Do(ctx context.Context, doc any) (bulk.Result, error) {
	f.got = doc
	return bulk.Result{Seq: 1}, f.err
}

func serve(t *testing.T, eng Doer, method, path, body string) (*httptest.ResponseRecorder, *Counters) {
	t.Helper()
	c := new(Counters)
	h := NewHandler(eng, c)
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec, c
}

func validBody() string {
	return `{"agent_id":"agent-1","status":"online","payload":"hello"}`
}

func TestCheckinOK(t *testing.T) {
	eng := &fakeEngine{}
	rec, c := serve(t, eng, http.MethodPost, "/checkin", validBody())
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, body %s", rec.Code, rec.Body)
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got["ok"] != true {
		t.Fatalf("body = %s, want {\"ok\":true}", rec.Body)
	}
	if req, ok := eng.got.(*Request); !ok || req.AgentID != "agent-1" || req.Payload != "hello" {
		t.Errorf("engine got %#v", eng.got)
	}
	if c.OK.Load() != 1 {
		t.Errorf("ok counter = %d", c.OK.Load())
	}
}

func TestCheckinRejects(t *testing.T) {
	long := strings.Repeat("a", MaxAgentIDLen+1)
	tests := []struct {
		name, body string
		want       int
		msg        string
	}{
		{"malformed", `{"agent_id":`, http.StatusBadRequest, "malformed body"},
		{"not an object", `[1,2]`, http.StatusBadRequest, "malformed body"},
		{"empty body", ``, http.StatusBadRequest, "malformed body"},
		{"unknown field", `{"agent_id":"a","extra":1}`, http.StatusBadRequest, "malformed body"},
		{"missing agent_id", `{"status":"online"}`, http.StatusBadRequest, "agent_id is required"},
		{"empty agent_id", `{"agent_id":""}`, http.StatusBadRequest, "agent_id is required"},
		{"long agent_id", `{"agent_id":"` + long + `"}`, http.StatusBadRequest, "agent_id is too long"},
		{"long payload", `{"agent_id":"a","payload":"` + strings.Repeat("p", MaxPayloadBytes+1) + `"}`, http.StatusBadRequest, "payload is too long"},
		{"trailing data", validBody() + `{}`, http.StatusBadRequest, "trailing data after body"},
		// encoding/json alone would store these as U+FFFD.
		{"invalid UTF-8 in agent_id", "{\"agent_id\":\"agent-\xff\"}", http.StatusBadRequest, "body is not valid UTF-8"},
		{"invalid UTF-8 in payload", "{\"agent_id\":\"a\",\"payload\":\"\xc3(\"}", http.StatusBadRequest, "body is not valid UTF-8"},
		{"oversized", `{"agent_id":"a","status":"` + strings.Repeat("s", MaxBodyBytes) + `"}`, http.StatusRequestEntityTooLarge, "body too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := &fakeEngine{}
			rec, c := serve(t, eng, http.MethodPost, "/checkin", tt.body)
			assertRejected(t, rec, c, eng, tt.want, tt.msg)
		})
	}
}

// assertRejected checks that a request was answered with a JSON error of the
// given status and message, and never reached the engine.
func assertRejected(t *testing.T, rec *httptest.ResponseRecorder, c *Counters, eng *fakeEngine, status int, msg string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d (body %s)", rec.Code, status, rec.Body)
	}
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error != msg {
		t.Errorf("body = %q, want the JSON error %q", rec.Body, msg)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type = %q", ct)
	}
	if eng.got != nil {
		t.Error("a rejected request reached the engine")
	}
	if c.Rejected.Load() != 1 {
		t.Errorf("rejected counter = %d, want 1", c.Rejected.Load())
	}
}

// A body cut short by the server's ReadTimeout is a 408, not a malformed body.
func TestCheckinBodyTimeout(t *testing.T) {
	eng := &fakeEngine{}
	c := new(Counters)
	body := io.MultiReader(strings.NewReader(`{"agent_id":`), iotest.ErrReader(os.ErrDeadlineExceeded))
	rec := httptest.NewRecorder()
	NewHandler(eng, c).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/checkin", body))
	assertRejected(t, rec, c, eng, http.StatusRequestTimeout, "body not received in time")
}

func TestCheckinAcceptsLimits(t *testing.T) {
	body := `{"agent_id":"` + strings.Repeat("é", MaxAgentIDLen) + `","payload":"` + strings.Repeat("p", MaxPayloadBytes) + `"}`
	rec, _ := serve(t, &fakeEngine{}, http.MethodPost, "/checkin", body)
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, body %s", rec.Code, rec.Body)
	}
}

func TestCheckinEngineErrors(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantStatus int
		counter    func(*Counters) uint64
	}{
		{"backend timeout", bulk.ErrBackendTimeout, http.StatusGatewayTimeout, func(c *Counters) uint64 { return c.Failed.Load() }},
		{"closed", bulk.ErrClosed, http.StatusServiceUnavailable, func(c *Counters) uint64 { return c.Failed.Load() }},
		{"other", errors.New("boom"), http.StatusServiceUnavailable, func(c *Counters) uint64 { return c.Failed.Load() }},
		{"abort before enqueue", &bulk.AbortError{Err: context.Canceled}, http.StatusOK, func(c *Counters) uint64 { return c.AbortedBeforeEnqueue.Load() }},
		{"abort after enqueue", &bulk.AbortError{Enqueued: true, Err: context.Canceled}, http.StatusOK, func(c *Counters) uint64 { return c.AbortedAfterEnqueue.Load() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, c := serve(t, &fakeEngine{err: tt.err}, http.MethodPost, "/checkin", validBody())
			// An aborted check-in writes nothing; the recorder then reports
			// its default 200 and an empty body.
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusOK && rec.Body.Len() != 0 {
				t.Errorf("aborted check-in wrote %q", rec.Body)
			}
			if got := tt.counter(c); got != 1 {
				t.Errorf("counter = %d, want 1", got)
			}
		})
	}
}
