package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// maxReply bounds one reply: 100 items of about 8 KB each, with room to spare.
const maxReply = 16 << 20

// message is the part of a server message a client checks.
type message struct {
	Type   string            `json:"type"`
	Ref    string            `json:"ref"`
	Status string            `json:"status"`
	Reason string            `json:"reason"`
	Items  []json.RawMessage `json:"items"`
}

// runClient is one user: connect, join a topic, make cfg.requests requests, then
// stay connected and idle until hold ends.
func runClient(ctx, hold context.Context, cfg config, n int, st *stats) {
	dialCtx, cancel := context.WithTimeout(ctx, cfg.timeout)
	conn, _, err := websocket.Dial(dialCtx, wsURL(cfg.url), nil)
	cancel()
	if err != nil {
		st.errors.Add(1)
		return
	}
	st.connected.Add(1)
	st.open.Add(1)
	defer st.open.Add(-1)
	defer conn.CloseNow()
	conn.SetReadLimit(maxReply)

	topic := "accounts:" + strconv.Itoa(n)
	if _, err := call(ctx, conn, cfg.timeout, map[string]any{"type": "join", "ref": "join", "topic": topic}, "joined"); err != nil {
		st.errors.Add(1)
		return
	}
	st.joined.Add(1)

	for i := range cfg.requests {
		if i > 0 && !sleep(hold, cfg.interval) {
			break
		}
		req := map[string]any{
			"type": "request", "ref": strconv.Itoa(i), "topic": topic,
			"op": "list_items", "params": map[string]any{"limit": cfg.limit},
		}
		st.sent.Add(1)
		size, err := call(ctx, conn, cfg.timeout, req, "reply")
		st.bytes.Add(int64(size))
		if err != nil {
			st.errors.Add(1)
			continue
		}
		st.ok.Add(1)
	}

	// Idle, as a user with the page open: keep answering pings until the run ends.
	conn.CloseRead(ctx)
	<-hold.Done()
	_ = conn.Close(websocket.StatusNormalClosure, "")
}

// call writes one request and reads until the message of the wanted type with the
// same ref arrives; it returns the reply's size.
func call(ctx context.Context, conn *websocket.Conn, timeout time.Duration, req map[string]any, want string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	if err := conn.Write(ctx, websocket.MessageText, body); err != nil {
		return 0, err
	}
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return 0, err
		}
		var msg message
		if err := json.Unmarshal(data, &msg); err != nil {
			return len(data), err
		}
		if msg.Ref != req["ref"] {
			continue
		}
		switch {
		case msg.Type == "error":
			return len(data), fmt.Errorf("error reply: %s", msg.Reason)
		case msg.Type != want:
			return len(data), fmt.Errorf("got %q, want %q", msg.Type, want)
		case want == "reply" && (msg.Status != "ok" || len(msg.Items) != limitOf(req)):
			return len(data), fmt.Errorf("reply with %d items", len(msg.Items))
		}
		return len(data), nil
	}
}

func limitOf(req map[string]any) int {
	params, _ := req["params"].(map[string]any)
	limit, _ := params["limit"].(int)
	return limit
}

// sleep waits d, or returns false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func wsURL(base string) string {
	return "ws://" + strings.TrimPrefix(base, "http://") + "/socket"
}
