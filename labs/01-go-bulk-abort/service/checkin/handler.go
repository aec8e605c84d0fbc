// Package checkin serves the agents' check-in endpoint on top of the bulk
// engine.
package checkin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"unicode/utf8"

	"leaklab.dev/bulkabort/bulk"
)

const (
	// MaxBodyBytes is the largest request body the handler reads.
	MaxBodyBytes = 64 << 10
	// MaxPayloadBytes is the largest payload a check-in may carry.
	MaxPayloadBytes = 8 << 10
	// MaxAgentIDLen is the longest agent id accepted.
	MaxAgentIDLen = 128
)

// Request is the body of POST /checkin.
type Request struct {
	AgentID string `json:"agent_id"`
	Status  string `json:"status"`
	Payload string `json:"payload"`
}

// Doer is the part of the bulk engine the handler needs. It exists so that
// handler tests can run without an engine.
type Doer interface {
	Do(ctx context.Context, doc any) (bulk.Result, error)
}

// Counters records how check-ins end. It exists so that the service can
// publish the numbers and tests can read them.
type Counters struct {
	// OK counts check-ins the backend stored.
	OK atomic.Uint64
	// AbortedBeforeEnqueue and AbortedAfterEnqueue count check-ins whose
	// client went away while the engine was busy, by where Do was waiting.
	AbortedBeforeEnqueue atomic.Uint64
	AbortedAfterEnqueue  atomic.Uint64
	// Failed counts check-ins answered with 503 or 504.
	Failed atomic.Uint64
	// Rejected counts requests answered with a 4xx status.
	Rejected atomic.Uint64
}

// Handler serves POST /checkin. Every other path is a 404.
type Handler struct {
	engine   Doer
	counters *Counters
}

// NewHandler returns a handler that records outcomes in counters.
func NewHandler(engine Doer, counters *Counters) *Handler {
	return &Handler{engine: engine, counters: counters}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/checkin" {
		h.reject(w, http.StatusNotFound, "not found")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.reject(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}

	req, status, msg := decode(w, r)
	if status != 0 {
		h.reject(w, status, msg)
		return
	}

	_, err := h.engine.Do(r.Context(), req)
	if err == nil {
		h.counters.OK.Add(1)
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
		return
	}

	var abort *bulk.AbortError
	switch {
	case errors.As(err, &abort):
		// The client is gone; there is nobody to answer.
		if abort.Enqueued {
			h.counters.AbortedAfterEnqueue.Add(1)
		} else {
			h.counters.AbortedBeforeEnqueue.Add(1)
		}
	case errors.Is(err, bulk.ErrBackendTimeout):
		h.counters.Failed.Add(1)
		writeError(w, http.StatusGatewayTimeout, "backend timeout")
	default:
		h.counters.Failed.Add(1)
		writeError(w, http.StatusServiceUnavailable, "unavailable")
	}
}

// decode reads and validates the body. On failure it returns the status and
// message to answer with.
func decode(w http.ResponseWriter, r *http.Request) (*Request, int, string) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	var req Request
	if err := dec.Decode(&req); err != nil {
		if tooLarge(err) {
			return nil, http.StatusRequestEntityTooLarge, "body too large"
		}
		return nil, http.StatusBadRequest, "malformed body"
	}
	// Read to the end so that trailing data is rejected and so that the server
	// notices if the client goes away while the request is being handled.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if tooLarge(err) {
			return nil, http.StatusRequestEntityTooLarge, "body too large"
		}
		return nil, http.StatusBadRequest, "trailing data after body"
	}
	switch {
	case req.AgentID == "":
		return nil, http.StatusBadRequest, "agent_id is required"
	case utf8.RuneCountInString(req.AgentID) > MaxAgentIDLen:
		return nil, http.StatusBadRequest, "agent_id is too long"
	case len(req.Payload) > MaxPayloadBytes:
		return nil, http.StatusBadRequest, "payload is too long"
	}
	return &req, 0, ""
}

func tooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

func (h *Handler) reject(w http.ResponseWriter, status int, msg string) {
	h.counters.Rejected.Add(1)
	writeError(w, status, msg)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
