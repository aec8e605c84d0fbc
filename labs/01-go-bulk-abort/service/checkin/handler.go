// Package checkin serves the agents' check-in endpoint on top of the bulk
// engine.
package checkin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
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
	// Rejected counts check-ins answered with a 4xx status.
	Rejected atomic.Uint64
}

// Handler serves POST /checkin. It does not look at the method or the path:
// the mux routes only that route to it, and answers 404 and 405 itself.
type Handler struct {
	engine   Doer
	counters *Counters
}

// NewHandler returns a handler that records outcomes in counters.
func NewHandler(engine Doer, counters *Counters) *Handler {
	return &Handler{engine: engine, counters: counters}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	// Read the whole body before decoding it: it is small, reading it to EOF
	// lets the server notice a client that goes away while the check-in is
	// handled, and the raw bytes can be checked as UTF-8.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	switch {
	case tooLarge(err):
		return nil, http.StatusRequestEntityTooLarge, "body too large"
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The server's ReadTimeout passed before the client sent it all.
		return nil, http.StatusRequestTimeout, "body not received in time"
	case err != nil:
		return nil, http.StatusBadRequest, "unreadable body"
	}
	// JSON exchanged between systems must be UTF-8 (RFC 8259). encoding/json
	// would quietly turn invalid bytes into U+FFFD, storing an agent_id that
	// no agent sent.
	if !utf8.Valid(body) {
		return nil, http.StatusBadRequest, "body is not valid UTF-8"
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req Request
	if err := dec.Decode(&req); err != nil {
		return nil, http.StatusBadRequest, "malformed body"
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
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
