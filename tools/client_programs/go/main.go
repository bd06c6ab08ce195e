// The client scenario with franz-go (kgo, kadm) and IBM Sarama: create a topic, produce
// with acks=all from an idempotent producer, consume in a group of three that commits after
// every poll while one member leaves half-way, then list and describe the group and the
// topic. Prints one JSON object on stdout; the test decides what is right.
//
// Usage: clients franz|sarama classic|consumer BOOTSTRAP TOPIC N (the group is TOPIC-group)
// or clients sink [PORT] (sink.go).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	partitions = 3
	deadline   = 90 * time.Second
)

// Summary is what the program prints; the same shape for every client.
type Summary struct {
	Client      string           `json:"client"`
	Version     string           `json:"version"`
	Protocol    string           `json:"protocol"`
	Topic       string           `json:"topic"`
	Group       string           `json:"group"`
	Produced    [][3]any         `json:"produced"` // partition, offset, key
	Aborted     [][3]any         `json:"aborted"`
	Consumed    [][4]any         `json:"consumed"` // member, partition, offset, key
	Assignments int              `json:"assignments"`
	Group_      GroupDescription `json:"group_description"`
	Committed   map[string]int64 `json:"committed"`
	Topics      TopicDescription `json:"topics"`
	Errors      []string         `json:"errors"`
	Timings     map[string]int64 `json:"timings_ms"`
}

type GroupDescription struct {
	Listed  []string `json:"listed"`
	State   string   `json:"state"`
	Type    string   `json:"type"`
	Members int      `json:"members"`
}

type PartitionDescription struct {
	Partition int32 `json:"partition"`
	Leader    int32 `json:"leader"`
	Replicas  int   `json:"replicas"`
	Isr       int   `json:"isr"`
}

type TopicDescription struct {
	Listed     []string               `json:"listed"`
	Partitions []PartitionDescription `json:"partitions"`
}

// Client is what each library provides to the shared scenario.
type Client interface {
	CreateTopic(ctx context.Context, topic string) error
	// Produce sends keys with acks=all and returns (partition, offset) for each, in order.
	Produce(ctx context.Context, topic string, keys []string) ([][2]int64, error)
	// Member starts one consumer of the group; stop() leaves the group and waits.
	Member(s *Scenario, index int) (stop func())
	Describe(ctx context.Context, s *Scenario) (GroupDescription, TopicDescription, error)
	// Committed is the group's committed offsets, read after every member has left.
	Committed(ctx context.Context, s *Scenario) (map[string]int64, error)
	Close()
}

// Scenario holds what the members saw, from any goroutine.
type Scenario struct {
	mu          sync.Mutex
	started     time.Time
	summary     Summary
	assignment  map[int]map[int32]bool
	consumedLen int
}

func (s *Scenario) mark(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.summary.Timings[what] = time.Since(s.started).Milliseconds()
}

func (s *Scenario) Consumed(member int, partition int32, offset int64, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.summary.Consumed = append(s.summary.Consumed, [4]any{member, partition, offset, key})
	s.consumedLen++
}

func (s *Scenario) Assigned(member int, parts []int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.assignment[member] == nil {
		s.assignment[member] = map[int32]bool{}
	}
	for _, p := range parts {
		s.assignment[member][p] = true
	}
	s.summary.Assignments++
}

func (s *Scenario) Revoked(member int, parts []int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range parts {
		delete(s.assignment[member], p)
	}
}

func (s *Scenario) Left(member int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.assignment, member)
}

func (s *Scenario) Error(err string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.summary.Errors = append(s.summary.Errors, err)
}

// shared: exactly `members` members, each with a partition, together holding all of them.
func (s *Scenario) shared(members int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := []int{}
	for _, parts := range s.assignment {
		if len(parts) == 0 {
			return false
		}
		for p := range parts {
			all = append(all, int(p))
		}
	}
	sort.Ints(all)
	return len(s.assignment) == members && fmt.Sprint(all) == "[0 1 2]"
}

func (s *Scenario) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.consumedLen
}

func await(what string, cond func() bool) error {
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

func run(c Client, s *Scenario, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 4*deadline)
	defer cancel()
	topic := s.summary.Topic
	if err := c.CreateTopic(ctx, topic); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	s.mark("topic_created")
	stops := make([]func(), 3)
	for i := range stops {
		stops[i] = c.Member(s, i)
	}
	stopAll := func() {
		for i, stop := range stops {
			if stop != nil {
				stop()
				stops[i] = nil
			}
		}
	}
	defer stopAll()
	produce := func(from, to int) error {
		keys := make([]string, 0, to-from)
		for i := from; i < to; i++ {
			keys = append(keys, "key-"+strconv.Itoa(i))
		}
		at, err := c.Produce(ctx, topic, keys)
		if err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		for i, po := range at {
			s.summary.Produced = append(s.summary.Produced, [3]any{po[0], po[1], keys[i]})
		}
		return nil
	}
	if err := await("three members sharing the partitions", func() bool { return s.shared(3) }); err != nil {
		return err
	}
	s.mark("group_of_three")
	half := n / 2
	if err := produce(0, half); err != nil {
		return err
	}
	s.mark("first_half_produced")
	if err := await("the first half consumed", func() bool { return s.count() >= half }); err != nil {
		return err
	}
	stops[0]()
	stops[0] = nil
	if err := await("two members sharing the partitions", func() bool { return s.shared(2) }); err != nil {
		return err
	}
	s.mark("rebalanced_to_two")
	if err := produce(half, n); err != nil {
		return err
	}
	s.mark("second_half_produced")
	if err := await("every message consumed", func() bool { return s.count() >= n }); err != nil {
		return err
	}
	s.mark("all_consumed")
	time.Sleep(500 * time.Millisecond) // a duplicate would arrive now
	// A consumer-protocol group is Reconciling until every member has acknowledged its
	// assignment on a heartbeat; describe again until Stable, within the deadline.
	var g GroupDescription
	var t TopicDescription
	var err error
	for end := time.Now().Add(deadline); ; time.Sleep(100 * time.Millisecond) {
		g, t, err = c.Describe(ctx, s)
		if err != nil || strings.EqualFold(g.State, "stable") || time.Now().After(end) {
			break
		}
	}
	s.mu.Lock()
	s.summary.Group_, s.summary.Topics = g, t
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	s.mark("group_described")
	stopAll()
	committed, err := c.Committed(ctx, s)
	if err != nil {
		return fmt.Errorf("committed offsets: %w", err)
	}
	s.mu.Lock()
	s.summary.Committed = committed
	s.mu.Unlock()
	return nil
}

func main() {
	if len(os.Args) >= 2 && os.Args[1] == "sink" {
		sinkMain(os.Args[2:])
		return
	}
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: clients franz|sarama classic|consumer BOOTSTRAP TOPIC N")
		os.Exit(2)
	}
	lib, protocol, bootstrap := os.Args[1], os.Args[2], strings.Split(os.Args[3], ",")
	topic := os.Args[4]
	n, err := strconv.Atoi(os.Args[5])
	if err != nil || n < 2 {
		fmt.Fprintf(os.Stderr, "N must be an integer of at least 2, not %q\n", os.Args[5])
		os.Exit(2)
	}
	s := &Scenario{
		started:    time.Now(),
		assignment: map[int]map[int32]bool{},
		summary: Summary{
			Client: lib, Protocol: protocol, Topic: topic, Group: topic + "-group",
			Produced: [][3]any{}, Aborted: [][3]any{}, Consumed: [][4]any{},
			Errors: []string{}, Timings: map[string]int64{},
		},
	}
	var c Client
	switch lib {
	case "franz":
		c, err = newFranz(bootstrap, protocol, s)
	case "sarama":
		c, err = newSarama(bootstrap, protocol, s)
	default:
		err = fmt.Errorf("unknown client %q (franz or sarama)", lib)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = run(c, s, n)
	c.Close()
	if err != nil {
		s.Error(err.Error())
	}
	s.mu.Lock()
	out, _ := json.Marshal(s.summary)
	s.mu.Unlock()
	fmt.Println(string(out))
}
