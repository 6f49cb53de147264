package pause

import (
	"context"
	"testing"
	"time"
)

func TestForWaitsTheWholeDuration(t *testing.T) {
	start := time.Now()
	if !For(context.Background(), 30*time.Millisecond) {
		t.Fatal("For returned false with a live context")
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Fatalf("For returned after %v, before its 30ms", took)
	}
}

func TestForEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	if For(ctx, time.Minute) {
		t.Fatal("For returned true though its context ended")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("For took %v to see its context end", took)
	}
}

func TestForZeroOrNegative(t *testing.T) {
	if !For(context.Background(), 0) || !For(context.Background(), -time.Second) {
		t.Fatal("a wait of zero or less with a live context: want true")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if For(ctx, 0) {
		t.Fatal("a wait of zero with an ended context: want false")
	}
	if For(ctx, time.Hour) {
		t.Fatal("a wait with an ended context: want false at once")
	}
}
