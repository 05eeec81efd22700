package msgq

import (
	"msgq.dev/client/go/internal/msgqv1"
)

// The one place that knows how names and ids travel in msgq.v1.
//
// keyspace and name are proto `string`s; ids are `bytes` (an id is the
// text form of column 0, which need not be UTF-8). The public API takes Go
// strings everywhere and converts here only.
type (
	wireName = string // MessageStreamRequest.keyspace/name and the like
	wireID   = []byte // ids, Delivery.id, ListDeadRequest.after_id
)

func nameToWire(s string) wireName { return wireName(s) }

func idToWire(s string) wireID { return wireID(s) }

func idFromWire(b wireID) string { return string(b) }

func idsToWire(ids []string) []wireID {
	out := make([]wireID, len(ids))
	for i, id := range ids {
		out[i] = idToWire(id)
	}
	return out
}

func deliveriesToWire(ds []Delivery) []*msgqv1.Delivery {
	out := make([]*msgqv1.Delivery, len(ds))
	for i, d := range ds {
		out[i] = &msgqv1.Delivery{Id: idToWire(d.ID), Epoch: d.Epoch}
	}
	return out
}

// Keyspace and name of a request, converted.
func tableToWire(t Table) (keyspace, name wireName) {
	return nameToWire(t.Keyspace), nameToWire(t.Name)
}
