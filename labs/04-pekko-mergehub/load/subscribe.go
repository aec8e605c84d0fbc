package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// subscribers hold WebSocket feeds open on the watched events for the whole
// load and count the locations they receive.
type subscribers struct {
	cfg   config
	stats *stats
	wg    sync.WaitGroup
}

// connect opens every feed and returns once all are open (or failed), so the
// publishers start against hubs that already have their subscribers.
func (s *subscribers) connect(ctx context.Context) {
	var opened sync.WaitGroup
	for _, event := range s.cfg.watched {
		for range s.cfg.subscribers {
			opened.Add(1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.follow(ctx, event, opened.Done)
			}()
		}
	}
	opened.Wait()
}

// follow reads one feed until ctx ends.
func (s *subscribers) follow(ctx context.Context, event string, opened func()) {
	url := strings.Replace(s.cfg.base, "http", "ws", 1) + fmt.Sprintf("/events/%s/subscribe", event)
	dialCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	conn, _, err := websocket.Dial(dialCtx, url, nil)
	cancel()
	opened()
	if err != nil {
		s.stats.subscriberErrors.Add(1)
		return
	}
	s.stats.subscribed.Add(1)
	defer conn.CloseNow()
	for {
		if _, _, err := conn.Read(ctx); err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				s.stats.subscriberErrors.Add(1)
			}
			return
		}
		s.stats.received.Add(1)
	}
}

// close ends every feed and waits for the readers to return.
func (s *subscribers) close(cancel context.CancelFunc) {
	cancel()
	s.wg.Wait()
}
