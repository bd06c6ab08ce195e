package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// franz-go: kgo for producing and consuming, kadm for the admin side.
type franz struct {
	seeds    []string
	protocol string
	client   *kgo.Client
	admin    *kadm.Client
	producer *kgo.Client
}

func moduleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "unknown"
}

func newFranz(seeds []string, protocol string, s *Scenario) (Client, error) {
	s.summary.Version = moduleVersion("github.com/twmb/franz-go") + " (kadm " +
		moduleVersion("github.com/twmb/franz-go/pkg/kadm") + ")"
	client, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	// Idempotent with acks=all is kgo's default; both are spelled out.
	producer, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if err != nil {
		client.Close()
		return nil, err
	}
	return &franz{seeds, protocol, client, kadm.NewClient(client), producer}, nil
}

func (f *franz) Close() {
	f.producer.Close()
	f.client.Close()
}

func (f *franz) CreateTopic(ctx context.Context, topic string) error {
	resp, err := f.admin.CreateTopic(ctx, partitions, 3, nil, topic)
	if err != nil {
		return err
	}
	return resp.Err
}

func (f *franz) Produce(ctx context.Context, topic string, keys []string) ([][2]int64, error) {
	records := make([]*kgo.Record, len(keys))
	for i, k := range keys {
		records[i] = &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte("value-" + k)}
	}
	results := f.producer.ProduceSync(ctx, records...)
	if err := results.FirstErr(); err != nil {
		return nil, err
	}
	// Results come in the order the records completed, not the order given.
	index := make(map[*kgo.Record]int, len(records))
	for i, r := range records {
		index[r] = i
	}
	at := make([][2]int64, len(results))
	for _, r := range results {
		at[index[r.Record]] = [2]int64{int64(r.Record.Partition), r.Record.Offset}
	}
	return at, nil
}

func parts(assigned map[string][]int32) []int32 {
	var out []int32
	for _, ps := range assigned {
		out = append(out, ps...)
	}
	return out
}

func (f *franz) Member(s *Scenario, index int) func() {
	opts := []kgo.Opt{
		kgo.SeedBrokers(f.seeds...),
		kgo.ClientID("member-" + strconv.Itoa(index)),
		kgo.ConsumerGroup(s.summary.Group),
		kgo.ConsumeTopics(s.summary.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		// Nothing is revoked between a poll and its commit: no record is read twice.
		kgo.BlockRebalanceOnPoll(),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.SessionTimeout(10 * time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			s.Assigned(index, parts(a))
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			s.Revoked(index, parts(r))
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			s.Revoked(index, parts(l))
		}),
	}
	if f.protocol == "consumer" {
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		s.Error(fmt.Sprintf("member %d: %v", index, err))
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pollCtx, pollCancel := context.WithTimeout(ctx, 100*time.Millisecond)
			fetches := cl.PollRecords(pollCtx, 100)
			pollCancel()
			fetches.EachError(func(t string, p int32, err error) {
				if ctx.Err() == nil && err != context.DeadlineExceeded && err != context.Canceled {
					s.Error(fmt.Sprintf("member %d fetch %s/%d: %v", index, t, p, err))
				}
			})
			records := fetches.Records()
			for _, r := range records {
				s.Consumed(index, r.Partition, r.Offset, string(r.Key))
			}
			if len(records) > 0 {
				commitCtx, commitCancel := context.WithTimeout(context.Background(), 30*time.Second)
				if err := cl.CommitRecords(commitCtx, records...); err != nil {
					s.Error(fmt.Sprintf("member %d commit: %v", index, err))
				}
				commitCancel()
			}
			cl.AllowRebalance()
		}
	}()
	return func() {
		cancel()
		<-done
		cl.Close() // leaves the group
		s.Left(index)
	}
}

func (f *franz) Describe(ctx context.Context, s *Scenario) (GroupDescription, TopicDescription, error) {
	var g GroupDescription
	var t TopicDescription
	listed, err := f.admin.ListGroups(ctx)
	if err != nil {
		return g, t, err
	}
	g.Listed = listed.Groups()
	for _, l := range listed {
		if l.Group == s.summary.Group {
			g.Type = l.GroupType
		}
	}
	group := s.summary.Group
	if f.protocol == "consumer" {
		var described kadm.DescribedConsumerGroups
		if described, err = f.admin.DescribeConsumerGroups(ctx, group); err == nil {
			d := described[group]
			g.State, g.Members, err = d.State, len(d.Members), d.Err
		}
	} else {
		var described kadm.DescribedGroups
		if described, err = f.admin.DescribeGroups(ctx, group); err == nil {
			d := described[group]
			g.State, g.Members, err = d.State, len(d.Members), d.Err
		}
	}
	if err != nil {
		return g, t, err
	}
	all, err := f.admin.ListTopics(ctx)
	if err != nil {
		return g, t, err
	}
	t.Listed = all.Names()
	details, err := f.admin.ListTopics(ctx, s.summary.Topic)
	if err != nil {
		return g, t, err
	}
	details.EachPartition(func(p kadm.PartitionDetail) {
		t.Partitions = append(t.Partitions, PartitionDescription{
			Partition: p.Partition, Leader: p.Leader, Replicas: len(p.Replicas), Isr: len(p.ISR),
		})
	})
	return g, t, nil
}

func (f *franz) Committed(ctx context.Context, s *Scenario) (map[string]int64, error) {
	offsets, err := f.admin.FetchOffsets(ctx, s.summary.Group)
	if err != nil {
		return nil, err
	}
	committed := map[string]int64{}
	offsets.Each(func(o kadm.OffsetResponse) {
		if o.Topic == s.summary.Topic && o.Err == nil {
			committed[strconv.Itoa(int(o.Partition))] = o.At
		}
	})
	return committed, nil
}
