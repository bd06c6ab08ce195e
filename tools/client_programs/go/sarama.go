package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/IBM/sarama"
)

// IBM Sarama: SyncProducer, ConsumerGroup and ClusterAdmin. Sarama speaks only the classic
// group protocol.
type saramaClient struct {
	addrs    []string
	admin    sarama.ClusterAdmin
	producer sarama.SyncProducer
}

func saramaConfig(clientID string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	cfg.ClientID = clientID
	return cfg
}

func newSarama(addrs []string, protocol string, s *Scenario) (Client, error) {
	if protocol != "classic" {
		return nil, errors.New("sarama speaks only the classic group protocol")
	}
	s.summary.Version = moduleVersion("github.com/IBM/sarama")
	admin, err := sarama.NewClusterAdmin(addrs, saramaConfig("admin"))
	if err != nil {
		return nil, err
	}
	cfg := saramaConfig("producer")
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 5
	cfg.Net.MaxOpenRequests = 1 // what an idempotent sarama producer requires
	producer, err := sarama.NewSyncProducer(addrs, cfg)
	if err != nil {
		_ = admin.Close()
		return nil, err
	}
	return &saramaClient{addrs, admin, producer}, nil
}

func (c *saramaClient) Close() {
	_ = c.producer.Close()
	_ = c.admin.Close()
}

func (c *saramaClient) CreateTopic(_ context.Context, topic string) error {
	return c.admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 3}, false)
}

func (c *saramaClient) Produce(_ context.Context, topic string, keys []string) ([][2]int64, error) {
	msgs := make([]*sarama.ProducerMessage, len(keys))
	for i, k := range keys {
		msgs[i] = &sarama.ProducerMessage{
			Topic: topic, Key: sarama.StringEncoder(k), Value: sarama.StringEncoder("value-" + k),
		}
	}
	if err := c.producer.SendMessages(msgs); err != nil {
		return nil, err
	}
	at := make([][2]int64, len(msgs))
	for i, m := range msgs {
		at[i] = [2]int64{int64(m.Partition), m.Offset}
	}
	return at, nil
}

// member is one consumer of the group: it records what it reads, marks it, and commits
// whenever it has caught up and when its session ends (before a rebalance hands its
// partitions to another member).
type member struct {
	s     *Scenario
	index int
	topic string
}

func (m *member) Setup(sess sarama.ConsumerGroupSession) error {
	m.s.Assigned(m.index, sess.Claims()[m.topic])
	return nil
}

func (m *member) Cleanup(sess sarama.ConsumerGroupSession) error {
	sess.Commit()
	m.s.Revoked(m.index, sess.Claims()[m.topic])
	return nil
}

func (m *member) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			m.s.Consumed(m.index, msg.Partition, msg.Offset, string(msg.Key))
			sess.MarkMessage(msg, "")
			if len(claim.Messages()) == 0 {
				sess.Commit()
			}
		case <-sess.Context().Done():
			return nil
		}
	}
}

func (c *saramaClient) Member(s *Scenario, index int) func() {
	cfg := saramaConfig("member-" + strconv.Itoa(index))
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Session.Timeout = 10 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	group, err := sarama.NewConsumerGroup(c.addrs, s.summary.Group, cfg)
	if err != nil {
		s.Error(fmt.Sprintf("member %d: %v", index, err))
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		for err := range group.Errors() {
			s.Error(fmt.Sprintf("member %d: %v", index, err))
		}
	}()
	go func() {
		defer close(done)
		handler := &member{s, index, s.summary.Topic}
		for ctx.Err() == nil {
			if err := group.Consume(ctx, []string{s.summary.Topic}, handler); err != nil && ctx.Err() == nil {
				s.Error(fmt.Sprintf("member %d consume: %v", index, err))
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	return func() {
		cancel()
		<-done
		_ = group.Close() // leaves the group
		s.Left(index)
	}
}

func (c *saramaClient) Describe(_ context.Context, s *Scenario) (GroupDescription, TopicDescription, error) {
	var g GroupDescription
	var t TopicDescription
	groups, err := c.admin.ListConsumerGroups()
	if err != nil {
		return g, t, err
	}
	for name := range groups {
		g.Listed = append(g.Listed, name)
	}
	described, err := c.admin.DescribeConsumerGroups([]string{s.summary.Group})
	if err != nil {
		return g, t, err
	}
	if len(described) != 1 || described[0].Err != sarama.ErrNoError {
		return g, t, fmt.Errorf("describe group %s: %v", s.summary.Group, described)
	}
	g.State, g.Type, g.Members = described[0].State, described[0].ProtocolType, len(described[0].Members)
	topics, err := c.admin.ListTopics()
	if err != nil {
		return g, t, err
	}
	for name := range topics {
		t.Listed = append(t.Listed, name)
	}
	metas, err := c.admin.DescribeTopics([]string{s.summary.Topic})
	if err != nil {
		return g, t, err
	}
	for _, md := range metas {
		for _, p := range md.Partitions {
			t.Partitions = append(t.Partitions, PartitionDescription{
				Partition: p.ID, Leader: p.Leader, Replicas: len(p.Replicas), Isr: len(p.Isr),
			})
		}
	}
	return g, t, nil
}

func (c *saramaClient) Committed(_ context.Context, s *Scenario) (map[string]int64, error) {
	offsets, err := c.admin.ListConsumerGroupOffsets(s.summary.Group, map[string][]int32{s.summary.Topic: {0, 1, 2}})
	if err != nil {
		return nil, err
	}
	committed := map[string]int64{}
	for p := int32(0); p < partitions; p++ {
		if b := offsets.GetBlock(s.summary.Topic, p); b != nil && b.Err == sarama.ErrNoError {
			committed[strconv.Itoa(int(p))] = b.Offset
		}
	}
	return committed, nil
}
