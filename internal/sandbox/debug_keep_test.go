package sandbox

import (
	"context"
	"os"
	"testing"
)

func TestDebugKeep(t *testing.T) {
	if os.Getenv("SBX_KEEP") == "" {
		t.Skip()
	}
	c, err := Up(context.Background(), Options{Dir: os.Getenv("SBX_KEEP"), Log: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(c.Nodes)
}
