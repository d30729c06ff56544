package ctlproto

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, Request{Version: Version, Command: CmdCheck, Name: "x"}); err != nil {
		t.Fatal(err)
	}
	WriteFrame(&buf, KindSegment, []byte("FLR\x00"))
	var req Request
	if err := ReadJSON(&buf, MaxRequest, &req); err != nil || req.Command != CmdCheck || req.Name != "x" {
		t.Fatalf("%+v %v", req, err)
	}
	if kind, body, err := ReadFrame(&buf, 4); err != nil || kind != KindSegment || string(body) != "FLR\x00" {
		t.Fatalf("%c %q %v", kind, body, err)
	}
	if _, _, err := ReadFrame(&buf, 4); err != io.EOF {
		t.Errorf("at the end: %v", err)
	}
	// A length over the limit fails before anything is read or allocated.
	big := []byte{KindJSON, 0xff, 0xff, 0xff, 0xff}
	if _, _, err := ReadFrame(bytes.NewReader(big), MaxRequest); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("oversized: %v", err)
	}
	if _, _, err := ReadFrame(bytes.NewReader([]byte{KindJSON, 0, 0, 0, 9, '{'}), MaxRequest); err == nil || !strings.Contains(err.Error(), "truncated frame (1 of 9 bytes)") {
		t.Errorf("truncated: %v", err)
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{"100": 100, "500k": 500 << 10, "100m": 100 << 20, "2G": 2 << 30} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "m", "-1", "1t", "99999999999999g"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	for in, want := range map[string]time.Duration{"30s": 30 * time.Second, "2d": 48 * time.Hour, "1m30s": 90 * time.Second} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	// Days past time.Duration's range are refused, not wrapped round
	// (213504d was 25 minutes).
	for _, bad := range []string{"", "-1d", "1x", "106752d", "213504d", "99999999999999999999d"} {
		if d, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v, accepted", bad, d)
		}
	}
	if d, err := ParseDuration("106751d"); err != nil || d != 106751*24*time.Hour {
		t.Errorf("ParseDuration(106751d) = %v, %v", d, err)
	}
	now := time.Date(2026, 11, 24, 13, 30, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"-10m":                 now.Add(-10 * time.Minute),
		"13:05:07":             time.Date(2026, 11, 24, 13, 5, 7, 0, time.UTC),
		"2026-11-24T12:00:00Z": time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC),
	} {
		if got, err := ParseTime(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseTime("yesterday", now); err == nil {
		t.Error("ParseTime(yesterday) accepted")
	}
}
