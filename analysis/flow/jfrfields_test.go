package flow

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/jfr"
)

// TestFastDecodeMatchesGeneric: the reader's own decoding of the flow
// records gives the spans the generic decoder gives, for every string
// encoding (null, empty, pooled, a missing pool key, UTF-8, Latin-1,
// ASCII and other char arrays), arrays of IDs, and records it leaves to
// the generic decoder, damaged ones included.
func TestFastDecodeMatchesGeneric(t *testing.T) {
	var out bytes.Buffer
	fw := newFlowWriter(t, &out, 1000, 1700000000000000000)
	str := fw.md.ClassByName(jfr.TypeString)
	if err := fw.w.AddConstant(str, 7, jfr.StringValue("pooled-rx")); err != nil {
		t.Fatal(err)
	}
	fw.write(flowspec.NodeEvent, 1000, map[string]jfr.Value{flowspec.FieldNodeName: jfr.StringValue("n1"),
		flowspec.FieldNodeNumber: jfr.IntValue(jfr.KindLong, 1)})
	long := func(v int64) jfr.Value { return jfr.IntValue(jfr.KindLong, v) }
	ev := func(kind string, ticks, span int64, thread jfr.Value, more map[string]jfr.Value) {
		f := map[string]jfr.Value{flowspec.FieldSpan: long(span), flowspec.FieldThread: thread}
		for k, v := range more {
			f[k] = v
		}
		fw.write(kind, ticks, f)
	}
	spanRec := func(ticks, span, in int64, outs ...jfr.Value) {
		cl := fw.md.ClassByName(flowspec.SpanEvent)
		outType := cl.Fields[cl.FieldIndex(flowspec.FieldOutgoing)].Type
		outTxtType := cl.Fields[cl.FieldIndex(flowspec.FieldOutgoingText)].Type
		fw.write(flowspec.SpanEvent, ticks, map[string]jfr.Value{flowspec.FieldSpan: long(span), flowspec.FieldIncoming: long(in),
			flowspec.FieldOutgoing:     jfr.ArrayValue(outType, long(flowspec.MessageID(1, 9)), long(0)),
			flowspec.FieldOutgoingText: jfr.ArrayValue(outTxtType, append(outs, jfr.Null(), jfr.StringValue(""))...)})
	}
	for i := range int64(40) {
		at := 2000 + 100*i
		ev("flightrec.flow.Received", at, i+1, jfr.PooledStringValue(7), nil)
		ev("flightrec.flow.HandleStart", at+1, i+1, jfr.PooledStringValue(99), map[string]jfr.Value{ // a key the pool lacks
			flowspec.FieldMessage: long(flowspec.MessageID(2, uint64(i+1)))})
		ev("flightrec.flow.Checkpoint", at+2, i+1, jfr.StringValue(""), map[string]jfr.Value{flowspec.FieldText: jfr.StringValue("LATIN\u00e9")})
		ev("flightrec.flow.Checkpoint", at+3, i+1, jfr.StringValue("main"), map[string]jfr.Value{flowspec.FieldText: jfr.StringValue("CHARSabc")})
		ev("flightrec.flow.Checkpoint", at+4, i+1, jfr.Null(), map[string]jfr.Value{flowspec.FieldText: jfr.StringValue("CHARS\u00e9")})
		ev("flightrec.flow.Attribute", at+5, i+1, jfr.StringValue("main"), map[string]jfr.Value{
			flowspec.FieldKey: jfr.StringValue("k\u00fc"), flowspec.FieldText: jfr.StringValue("v")})
		ev("flightrec.flow.SendStarted", at+6, i+1, jfr.StringValue("main"), map[string]jfr.Value{
			flowspec.FieldMessageText: jfr.StringValue("text-id"), flowspec.FieldMessage: long(flowspec.MessageID(1, 9))})
		spanRec(at+7, i+1, flowspec.MessageID(2, uint64(i+1)), jfr.StringValue("out-text"))
	}
	fw.close()
	rec := out.Bytes()
	// The writer writes UTF-8: make the marked texts Latin-1 (the same
	// bytes read as Latin-1) and char arrays (ASCII bytes are one-byte
	// varints; the two bytes of é one varint, another char).
	retag := func(marker string, tag byte) {
		for i := 0; ; {
			j := bytes.Index(rec[i:], []byte(marker))
			if j < 0 {
				return
			}
			i += j
			if rec[i-2] != 3 {
				t.Fatalf("no UTF-8 tag before %q", marker)
			}
			rec[i-2] = tag
			if tag == 4 { // the length counts the varints, each ending in a byte below 0x80
				n := 0
				for _, c := range rec[i : i+int(rec[i-1])] {
					if c < 0x80 {
						n++
					}
				}
				rec[i-1] = byte(n)
			}
			i++
		}
	}
	retag("LATIN", 5)
	retag("CHARS", 4)
	damaged := bytes.Clone(rec)
	damaged[bytes.LastIndex(damaged, []byte("text-id"))-2] = 9 // an unknown string encoding
	for name, data := range map[string][]byte{"whole": rec, "damaged": damaged} {
		t.Run(name, func(t *testing.T) {
			read := func(generic bool) (*jfrSource, []rawSpan, error) {
				s := newJFRSource(name, bytes.NewReader(data), io.NopCloser(nil), t.TempDir())
				s.generic = generic
				spans, err := readSpans(t, s)
				return s, spans, err
			}
			gs, want, wantErr := read(true)
			fs, got, gotErr := read(false)
			if len(want) < 40 && name == "whole" {
				t.Fatalf("%d spans, %v, damage %v", len(want), wantErr, gs.damaged())
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("spans differ:\nfast    %+v\ngeneric %+v", got, want)
			}
			if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
				t.Errorf("error %v, generic %v", gotErr, wantErr)
			}
			if !reflect.DeepEqual(fs.damaged(), gs.damaged()) || !reflect.DeepEqual(fs.threads(), gs.threads()) || fs.node() != gs.node() {
				t.Errorf("damage %v, threads %q, node %s; generic %v, %q, %s", fs.damaged(), fs.threads(), fs.node(),
					gs.damaged(), gs.threads(), gs.node())
			}
			if name == "damaged" && len(gs.damaged()) == 0 && wantErr == io.EOF {
				t.Error("the damage went unnoticed")
			}
		})
	}
}
