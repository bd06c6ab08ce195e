// The sink: a one-broker Kafka server that acknowledges every produced batch and keeps
// nothing but a count. It answers ApiVersions, Metadata, CreateTopics, Produce, ListOffsets
// and Fetch (every topic exists with three partitions, led by node 0) so that clients run
// against it as against a broker: a fetch gets as many records as were produced, 1 KiB
// values in batches made once and given their offsets. What a client reaches here is its
// own ceiling on this machine, the most any broker could let it send or read. It runs on
// one core (GOMAXPROCS 1), so that it takes as little as it can from the client's.
//
// Usage: clients sink [PORT] (0, the default, picks a free one); it prints "listening PORT"
// once ready and serves until killed. A request it cannot read closes its connection, with
// what was wrong on stderr.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	sinkPartitions = 3
	maxFrame       = 100 << 20 // socket.request.max.bytes, as Kafka's default
)

// The versions the sink answers; the clients of Kafka 4 ask for no older ones.
var sinkVersions = map[int16][2]int16{
	0:  {3, 13},  // Produce
	1:  {12, 17}, // Fetch: flexible versions only
	2:  {1, 10},  // ListOffsets
	3:  {0, 13},  // Metadata
	18: {0, 4},   // ApiVersions
	19: {2, 7},   // CreateTopics
}

// The records a fetched batch holds at most, and the value each carries.
const (
	batchRecords = 1000
	valueSize    = 1024
)

type sink struct {
	port    int32
	mu      sync.Mutex
	names   map[[16]byte]string
	offsets map[string][]int64 // topic -> each partition's next offset
	batches map[int][]byte     // record count -> a batch of that many, at base offset 0
}

func topicID(name string) [16]byte {
	var id [16]byte
	sum := sha256.Sum256([]byte(name))
	copy(id[:], sum[:16])
	return id
}

func runSink(port string) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return err
	}
	s := &sink{
		port:    int32(ln.Addr().(*net.TCPAddr).Port),
		names:   map[[16]byte]string{},
		offsets: map[string][]int64{},
		batches: map[int][]byte{},
	}
	fmt.Printf("listening %d\n", s.port)
	for {
		conn, err := ln.Accept()
		if err != nil {
			return err
		}
		go s.serve(conn)
	}
}

func (s *sink) serve(conn net.Conn) {
	defer conn.Close()
	r, w := bufio.NewReaderSize(conn, 1<<20), bufio.NewWriterSize(conn, 1<<16)
	var size [4]byte
	for {
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		length := binary.BigEndian.Uint32(size[:])
		if length > maxFrame {
			fmt.Fprintf(os.Stderr, "sink: a request of %d bytes, above %d\n", length, maxFrame)
			return
		}
		frame := make([]byte, length)
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		pieces, err := s.answer(frame)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sink:", err)
			return
		}
		if pieces == nil { // acks=0
			continue
		}
		total := 0
		for _, p := range pieces {
			total += len(p)
		}
		binary.BigEndian.PutUint32(size[:], uint32(total))
		if total < 1<<16 {
			w.Write(size[:])
			for _, p := range pieces {
				w.Write(p)
			}
		} else { // a large answer leaves in one gathered write, the batches uncopied
			if err := w.Flush(); err != nil {
				return
			}
			out := append(net.Buffers{size[:]}, pieces...)
			if _, err := out.WriteTo(conn); err != nil {
				return
			}
		}
		if r.Buffered() == 0 { // nothing more read: send what is answered
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// answer is the response frame (header and body) of one request frame, in pieces; none
// for a produce with acks=0.
func (s *sink) answer(frame []byte) ([][]byte, error) {
	if len(frame) < 10 {
		return nil, fmt.Errorf("a request of %d bytes", len(frame))
	}
	key := int16(binary.BigEndian.Uint16(frame[0:]))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	correlation := frame[4:8]
	clientID := int(int16(binary.BigEndian.Uint16(frame[8:])))
	body := frame[10:]
	if clientID > len(body) {
		return nil, fmt.Errorf("API key %d: a client id of %d bytes in %d", key, clientID, len(body))
	}
	if clientID > 0 {
		body = body[clientID:]
	}
	span, ok := sinkVersions[key]
	if !ok {
		return nil, fmt.Errorf("API key %d is not served", key)
	}
	if version < span[0] || (version > span[1] && key != 18) {
		return nil, fmt.Errorf("API key %d v%d: the sink serves v%d-v%d", key, version, span[0], span[1])
	}
	req := kmsg.RequestForKey(key)
	if key == 18 && version > span[1] {
		// An ApiVersions newer than ours: a v0 answer with UNSUPPORTED_VERSION and the list.
		resp := s.apiVersions(0)
		resp.ErrorCode = 35
		return [][]byte{append(append([]byte{}, correlation...), resp.AppendTo(nil)...)}, nil
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		rest, err := skipTags(body)
		if err != nil {
			return nil, err
		}
		body = rest
	}
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("API key %d v%d: %w", key, version, err)
	}
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp = s.apiVersions(version)
	case *kmsg.MetadataRequest:
		resp = s.metadata(r)
	case *kmsg.CreateTopicsRequest:
		resp = s.createTopics(r)
	case *kmsg.ListOffsetsRequest:
		resp = s.listOffsets(r)
	case *kmsg.FetchRequest:
		return append([][]byte{append(append([]byte{}, correlation...), 0)}, s.fetch(r)...), nil
	case *kmsg.ProduceRequest:
		if r.Acks == 0 {
			s.produce(r)
			return nil, nil
		}
		resp = s.produce(r)
	}
	resp.SetVersion(version)
	out := append([]byte{}, correlation...)
	if resp.IsFlexible() && key != 18 { // ApiVersions answers with header v0 always
		out = append(out, 0)
	}
	return [][]byte{resp.AppendTo(out)}, nil
}

// skipTags is what follows the tagged fields of a flexible request header.
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, fmt.Errorf("a bad tag count")
	}
	b = b[n:]
	for i := uint64(0); i < count; i++ {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, fmt.Errorf("a bad tag")
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < size {
			return nil, fmt.Errorf("a bad tag size")
		}
		b = b[n+int(size):]
	}
	return b, nil
}

func (s *sink) apiVersions(version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	for key, span := range sinkVersions {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = key, span[0], span[1]
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

func (s *sink) metadata(r *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := kmsg.NewPtrMetadataResponse()
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = 0, "127.0.0.1", s.port
	resp.Brokers = append(resp.Brokers, b)
	cluster := "kafkagen-sink"
	resp.ClusterID, resp.ControllerID = &cluster, 0
	s.mu.Lock()
	var names []string
	if r.Topics == nil {
		for name := range s.offsets {
			names = append(names, name)
		}
	} else {
		for _, t := range r.Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
				s.topic(*t.Topic)
			}
		}
	}
	s.mu.Unlock()
	for _, name := range names {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic, t.TopicID = kmsg.StringPtr(name), topicID(name)
		for p := int32(0); p < sinkPartitions; p++ {
			part := kmsg.NewMetadataResponseTopicPartition()
			part.Partition, part.Leader = p, 0
			part.Replicas, part.ISR = []int32{0}, []int32{0}
			t.Partitions = append(t.Partitions, part)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func (s *sink) createTopics(r *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := kmsg.NewPtrCreateTopicsResponse()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range r.Topics {
		s.topic(t.Topic)
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, topicID(t.Topic)
		rt.NumPartitions, rt.ReplicationFactor = sinkPartitions, 1
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// produce gives each batch its offsets (from its last offset delta) and keeps nothing.
func (s *sink) produce(r *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range r.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		next := s.offsets[s.name(t.Topic, t.TopicID)]
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			if p.Partition < 0 || int(p.Partition) >= len(next) {
				rp.ErrorCode = 3 // UNKNOWN_TOPIC_OR_PARTITION
			} else {
				rp.BaseOffset = next[p.Partition]
				next[p.Partition] += records(p.Records)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// topic registers a topic (callers hold mu); every name exists on first use.
func (s *sink) topic(name string) []int64 {
	if next, ok := s.offsets[name]; ok {
		return next
	}
	next := make([]int64, sinkPartitions)
	s.offsets[name], s.names[topicID(name)] = next, name
	return next
}

// name is a request's topic, by name before topic ids and by id after (callers hold mu).
func (s *sink) name(topic string, id [16]byte) string {
	if id != ([16]byte{}) {
		topic = s.names[id]
	}
	s.topic(topic)
	return topic
}

func (s *sink) listOffsets(r *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	resp := kmsg.NewPtrListOffsetsResponse()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range r.Topics {
		next := s.topic(t.Topic)
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.Timestamp, rp.Offset = p.Partition, -1, 0
			if p.Partition < 0 || int(p.Partition) >= len(next) {
				rp.ErrorCode = 3
			} else if p.Timestamp == -1 { // the latest offset; every other ask gets 0
				rp.Offset = next[p.Partition]
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetch answers with batches from each asked offset up to what was produced, at most a
// partition's and the request's byte limits (and always one batch when there is one). With
// nothing to send it waits the request's wait, at most 100 ms, as a broker would for data.
// The answer (a flexible version, 12 on) is written by hand as pieces: each batch goes out
// as its own 8-byte base offset and the made batch's shared rest, copied by no one.
func (s *sink) fetch(r *kmsg.FetchRequest) [][]byte {
	budget, sent := int(r.MaxBytes), 0
	if budget <= 0 {
		budget = 1 << 30
	}
	head := binary.BigEndian.AppendUint32(nil, 0) // throttle time
	head = binary.BigEndian.AppendUint16(head, 0) // error code
	head = binary.BigEndian.AppendUint32(head, 0) // no fetch session
	head = binary.AppendUvarint(head, uint64(len(r.Topics)+1))
	pieces := [][]byte{}
	s.mu.Lock()
	for _, t := range r.Topics {
		next := s.offsets[s.name(t.Topic, t.TopicID)]
		if r.Version >= 13 {
			head = append(head, t.TopicID[:]...)
		} else {
			head = binary.AppendUvarint(head, uint64(len(t.Topic)+1))
			head = append(head, t.Topic...)
		}
		head = binary.AppendUvarint(head, uint64(len(t.Partitions)+1))
		for _, p := range t.Partitions {
			head = binary.BigEndian.AppendUint32(head, uint32(p.Partition))
			var batches [][]byte
			size, end := 0, int64(0)
			if p.Partition < 0 || int(p.Partition) >= len(next) {
				head = binary.BigEndian.AppendUint16(head, 3) // UNKNOWN_TOPIC_OR_PARTITION
			} else {
				head = binary.BigEndian.AppendUint16(head, 0)
				end = next[p.Partition]
				for at := p.FetchOffset; at < end; {
					n := int(min(end-at, batchRecords))
					b := s.batch(n)
					if size > 0 && (size+len(b) > int(p.PartitionMaxBytes) || sent+len(b) > budget) {
						break
					}
					batches = append(batches, binary.BigEndian.AppendUint64(nil, uint64(at)), b[8:])
					at += int64(n)
					size += len(b)
					sent += len(b)
				}
			}
			head = binary.BigEndian.AppendUint64(head, uint64(end)) // high watermark
			head = binary.BigEndian.AppendUint64(head, uint64(end)) // last stable offset
			head = binary.BigEndian.AppendUint64(head, 0)           // log start offset
			head = binary.AppendUvarint(head, 1)                    // no aborted transactions
			head = binary.BigEndian.AppendUint32(head, 0xFFFFFFFF)  // no preferred replica
			head = binary.AppendUvarint(head, uint64(size+1))
			pieces = append(append(pieces, head), batches...)
			head = []byte{0} // the partition's tagged fields, then what follows
		}
		head = append(head, 0) // the topic's tagged fields
	}
	s.mu.Unlock()
	pieces = append(pieces, append(head, 0)) // the response's tagged fields
	if sent == 0 && r.MaxWaitMillis > 0 {
		time.Sleep(time.Duration(min(r.MaxWaitMillis, 100)) * time.Millisecond)
	}
	return pieces
}

// batch is a v2 record batch of n records with 1 KiB values, at base offset 0; the CRC
// leaves the base offset out, so one made batch serves every offset.
func (s *sink) batch(n int) []byte {
	if b, ok := s.batches[n]; ok {
		return b
	}
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = 'x'
	}
	var records []byte
	for i := 0; i < n; i++ {
		var rec []byte
		rec = append(rec, 0)                      // attributes
		rec = binary.AppendVarint(rec, 0)         // timestamp delta
		rec = binary.AppendVarint(rec, int64(i))  // offset delta
		rec = binary.AppendVarint(rec, -1)        // no key
		rec = binary.AppendVarint(rec, valueSize) // value length
		rec = append(rec, value...)
		rec = binary.AppendVarint(rec, 0) // no headers
		records = binary.AppendVarint(records, int64(len(rec)))
		records = append(records, rec...)
	}
	now := time.Now().UnixMilli()
	tail := binary.BigEndian.AppendUint16(nil, 0)                  // attributes
	tail = binary.BigEndian.AppendUint32(tail, uint32(n-1))        // last offset delta
	tail = binary.BigEndian.AppendUint64(tail, uint64(now))        // base timestamp
	tail = binary.BigEndian.AppendUint64(tail, uint64(now))        // max timestamp
	tail = binary.BigEndian.AppendUint64(tail, 0xFFFFFFFFFFFFFFFF) // producer id -1
	tail = binary.BigEndian.AppendUint16(tail, 0xFFFF)             // producer epoch -1
	tail = binary.BigEndian.AppendUint32(tail, 0xFFFFFFFF)         // base sequence -1
	tail = binary.BigEndian.AppendUint32(tail, uint32(n))          // record count
	tail = append(tail, records...)
	crc := crc32.Checksum(tail, crc32.MakeTable(crc32.Castagnoli))
	b := binary.BigEndian.AppendUint64(nil, 0)                    // base offset
	b = binary.BigEndian.AppendUint32(b, uint32(4+1+4+len(tail))) // batch length
	b = binary.BigEndian.AppendUint32(b, 0)                       // partition leader epoch
	b = append(b, 2)                                              // magic
	b = binary.BigEndian.AppendUint32(b, crc)
	b = append(b, tail...)
	s.batches[n] = b
	return b
}

// records counts the records of a run of v2 batches: each batch's last offset delta + 1.
func records(b []byte) int64 {
	var n int64
	for len(b) >= 27 {
		length := int(binary.BigEndian.Uint32(b[8:]))
		n += int64(int32(binary.BigEndian.Uint32(b[23:]))) + 1
		if 12+length > len(b) {
			break
		}
		b = b[12+length:]
	}
	return n
}

func sinkMain(args []string) {
	runtime.GOMAXPROCS(1)
	port := "0"
	if len(args) == 1 {
		if _, err := strconv.Atoi(args[0]); err != nil {
			fmt.Fprintf(os.Stderr, "PORT must be a number, not %q\n", args[0])
			os.Exit(2)
		}
		port = args[0]
	}
	if err := runSink(port); err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		os.Exit(1)
	}
}
