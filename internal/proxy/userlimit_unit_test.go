package proxy

import (
	"strings"
	"sync"
	"testing"
)

// TestUserLimitConcurrent: many sessions taking and giving places at once never hold more than
// the limit, a refused take holds nothing, and every place comes back (no leak, never below 0).
func TestUserLimitConcurrent(t *testing.T) {
	const max, workers, rounds = 5, 32, 2000
	u := &userLimit{max: max}
	var wg sync.WaitGroup
	var over sync.Once
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if !u.take() {
					continue
				}
				if n := u.held.Load(); n > max || n < 1 {
					over.Do(func() { t.Errorf("held %d with a place taken, limit %d", n, max) })
				}
				u.give()
			}
		}()
	}
	wg.Wait()
	if n := u.held.Load(); n != 0 {
		t.Fatalf("held %d after every place was given back", n)
	}
	for i := range max {
		if !u.take() {
			t.Fatalf("take %d of %d refused", i+1, max)
		}
	}
	if u.take() {
		t.Fatal("take past the limit granted")
	}
	if n := u.held.Load(); n != max {
		t.Fatalf("held %d, want %d: a refused take must hold nothing", n, max)
	}
}

// TestHoldUser: a login takes a place under its user's limit, keeps it when it logs in again as
// the same user, moves it to another user (only once the new one has room), keeps the old one
// when the new user is full, and gives it back once.
func TestHoldUser(t *testing.T) {
	app, other := &userLimit{max: 1}, &userLimit{max: 1}
	limits := map[string]*userLimit{"app": app, "other": other}
	var a, b login
	if se := a.holdUser(limits, "app"); se != nil || app.held.Load() != 1 {
		t.Fatalf("first login: %v, held %d", se, app.held.Load())
	}
	if se := a.holdUser(limits, "app"); se != nil || app.held.Load() != 1 {
		t.Fatalf("the same user again: %v, held %d (a change to the same user keeps its place)", se, app.held.Load())
	}
	se := b.holdUser(limits, "app")
	if se == nil || se.Code != 1226 || se.State != "42000" ||
		se.Message != "User 'app' has exceeded the 'max_user_connections' resource (current value: 1)" {
		t.Fatalf("login past the limit: %v", se)
	}
	if b.held != nil || app.held.Load() != 1 {
		t.Fatalf("a refused login holds %v, app's held %d", b.held, app.held.Load())
	}
	// b logs in as a user without a limit, then changes to other.
	if se := b.holdUser(limits, "nolimit"); se != nil || b.held != nil {
		t.Fatalf("user without a limit: %v, holds %v", se, b.held)
	}
	if se := b.holdUser(limits, "other"); se != nil || other.held.Load() != 1 {
		t.Fatalf("change to other: %v, held %d", se, other.held.Load())
	}
	// a cannot change to other (full): it keeps its place under app's limit.
	if se := a.holdUser(limits, "other"); se == nil || a.held != app || app.held.Load() != 1 {
		t.Fatalf("change to a full user: %v, a holds app: %v, app held %d", se, a.held == app, app.held.Load())
	}
	// b changes to a user without a limit: other's place comes back.
	if se := b.holdUser(limits, "nolimit"); se != nil || other.held.Load() != 0 || b.held != nil {
		t.Fatalf("change to a user without a limit: %v, other held %d", se, other.held.Load())
	}
	a.release()
	a.release()
	b.release()
	if app.held.Load() != 0 || other.held.Load() != 0 {
		t.Fatalf("after release: app %d, other %d", app.held.Load(), other.held.Load())
	}
	long := "u_" + strings.Repeat("x", 80)
	if se := userLimitReached(long, 3); len(se.Message) != len("User '' has exceeded the 'max_user_connections' resource (current value: 3)")+64 {
		t.Errorf("a long name is cut at 64 characters, as the server's %%-.64s: %q", se.Message)
	}
}
