package cloud

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestLaunchBackoff(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	b := NewLaunchBackoff(clk)
	if _, _, held := b.Held("p", "c"); held {
		t.Fatal("held before any failure")
	}
	var delays []time.Duration
	for range 6 {
		d := b.Fail("p", "c", "InvalidAMIID.NotFound")
		delays = append(delays, d)
		if until, msg, held := b.Held("p", "c"); !held || msg != "InvalidAMIID.NotFound" || !until.Equal(clk.Now().Add(d)) {
			t.Fatalf("after a failure: held=%v until %v message %q", held, until, msg)
		}
		if _, _, held := b.Held("p", "other"); held {
			t.Fatal("another node class is held too")
		}
		clk.SetTime(clk.Now().Add(d))
		if _, _, held := b.Held("p", "c"); held {
			t.Fatalf("still held once %s passed", d)
		}
	}
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays %v, want %v", delays, want)
		}
	}
	clk.SetTime(clk.Now().Add(LaunchBackoffMax + time.Second))
	if d := b.Fail("p", "c", "x"); d != LaunchBackoffBase {
		t.Errorf("a failure long after the last starts at %s, got %s", LaunchBackoffBase, d)
	}
	b.Succeeded("p", "c")
	if _, _, held := b.Held("p", "c"); held {
		t.Error("held after a success")
	}
	if d := b.Fail("p", "c", "x"); d != LaunchBackoffBase {
		t.Errorf("a failure after a success starts at %s, got %s", LaunchBackoffBase, d)
	}
}
