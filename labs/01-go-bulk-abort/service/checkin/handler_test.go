package checkin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
		name, method, path, body string
		want                     int
	}{
		{"unknown route", http.MethodPost, "/nope", validBody(), http.StatusNotFound},
		{"root", http.MethodGet, "/", "", http.StatusNotFound},
		{"wrong method", http.MethodGet, "/checkin", "", http.StatusMethodNotAllowed},
		{"put", http.MethodPut, "/checkin", validBody(), http.StatusMethodNotAllowed},
		{"malformed", http.MethodPost, "/checkin", `{"agent_id":`, http.StatusBadRequest},
		{"not an object", http.MethodPost, "/checkin", `[1,2]`, http.StatusBadRequest},
		{"empty body", http.MethodPost, "/checkin", ``, http.StatusBadRequest},
		{"unknown field", http.MethodPost, "/checkin", `{"agent_id":"a","extra":1}`, http.StatusBadRequest},
		{"missing agent_id", http.MethodPost, "/checkin", `{"status":"online"}`, http.StatusBadRequest},
		{"empty agent_id", http.MethodPost, "/checkin", `{"agent_id":""}`, http.StatusBadRequest},
		{"long agent_id", http.MethodPost, "/checkin", `{"agent_id":"` + long + `"}`, http.StatusBadRequest},
		{"long payload", http.MethodPost, "/checkin", `{"agent_id":"a","payload":"` + strings.Repeat("p", MaxPayloadBytes+1) + `"}`, http.StatusBadRequest},
		{"trailing data", http.MethodPost, "/checkin", validBody() + `{}`, http.StatusBadRequest},
		{"oversized", http.MethodPost, "/checkin", `{"agent_id":"a","status":"` + strings.Repeat("s", MaxBodyBytes) + `"}`, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := &fakeEngine{}
			rec, c := serve(t, eng, tt.method, tt.path, tt.body)
			if rec.Code != tt.want {
				t.Fatalf("status = %d, want %d (body %s)", rec.Code, tt.want, rec.Body)
			}
			var body struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error == "" {
				t.Errorf("body = %q, want a JSON error", rec.Body)
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
		})
	}
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
