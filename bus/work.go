package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/jazz-run/jazz/messages"
)

// ErrKeyDeleted is also matched by a read of a key whose last write was a
// delete (ErrKeyNotFound matches it too).
var ErrKeyDeleted = jetstream.ErrKeyDeleted

// Seal computes a header (name and value) from a message's subject and
// encoded body: a receiver that knows the same secret can tell the
// message came from a holder of it, whoever the bus says published it.
type Seal func(subject string, data []byte) (header, value string)

// durableMsg is msg encoded, with its trace, message id and seal (when
// set) in headers.
func durableMsg(subject string, msg any, trace messages.Trace, msgID string, seal Seal) (*nats.Msg, error) {
	data, err := messages.Encode(msg)
	if err != nil {
		return nil, err
	}
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	for k, v := range trace {
		m.Header.Set(k, v)
	}
	if seal != nil {
		k, v := seal(subject, data)
		m.Header.Set(k, v)
	}
	if msgID != "" {
		// The stream drops a second message with the same id inside its
		// duplicates window: a retried publish is stored once.
		m.Header.Set(jetstream.MsgIDHeader, msgID)
	}
	return m, nil
}

// Publish stores msg (encoded, trace in headers) in the stream that
// captures subject and waits for the stream to confirm it; msgID, when
// set, makes a repeat inside the duplicates window a no-op.
func (j *JetStream) Publish(ctx context.Context, subject string, msg any, trace messages.Trace, msgID string) error {
	return j.PublishSealed(ctx, subject, msg, trace, msgID, nil)
}

// PublishSealed is Publish with seal's header added.
func (j *JetStream) PublishSealed(ctx context.Context, subject string, msg any, trace messages.Trace, msgID string, seal Seal) error {
	m, err := durableMsg(subject, msg, trace, msgID, seal)
	if err != nil {
		return err
	}
	if err := fits(j.js.Conn(), "store "+subject, len(m.Data)+headerSize(m.Header)); err != nil {
		return err
	}
	if _, err := j.js.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("store %s: %w", subject, noJetStream(err))
	}
	return nil
}

// PublishAsync is Publish without waiting for the confirmation: for a
// message that what follows it makes redundant if it is lost.
func (j *JetStream) PublishAsync(subject string, msg any, trace messages.Trace, msgID string) error {
	return j.PublishAsyncSealed(subject, msg, trace, msgID, nil)
}

// PublishAsyncSealed is PublishAsync with seal's header added.
func (j *JetStream) PublishAsyncSealed(subject string, msg any, trace messages.Trace, msgID string, seal Seal) error {
	m, err := durableMsg(subject, msg, trace, msgID, seal)
	if err != nil {
		return err
	}
	if err := fits(j.js.Conn(), "store "+subject, len(m.Data)+headerSize(m.Header)); err != nil {
		return err
	}
	if _, err := j.js.PublishMsgAsync(m); err != nil {
		return fmt.Errorf("store %s: %w", subject, err)
	}
	return nil
}

// QueueConfig is a durable consumer that members of a queue share: each
// message goes to one of them, and must be acknowledged explicitly.
type QueueConfig struct {
	Durable, Description, FilterSubject string
	// AckWait is the lease: an unacknowledged message, not kept alive
	// with InProgress, is delivered again after it.
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one message.
	MaxDeliver int
	// MaxAckPending bounds unacknowledged messages (-1: no bound).
	MaxAckPending int
	// MaxWaiting bounds pulls waiting at once.
	MaxWaiting int
}

// Queue is a bound queue consumer.
type Queue struct {
	c jetstream.Consumer
}

// Queue creates (or updates) the durable queue consumer on stream.
func (j *JetStream) Queue(ctx context.Context, stream string, cfg QueueConfig) (*Queue, error) {
	c, err := j.js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable: cfg.Durable, Description: cfg.Description, FilterSubject: cfg.FilterSubject,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: cfg.AckWait, MaxDeliver: cfg.MaxDeliver,
		MaxAckPending: cfg.MaxAckPending, MaxWaiting: cfg.MaxWaiting,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer %s on %s: %w", cfg.Durable, stream, noJetStream(err))
	}
	return &Queue{c: c}, nil
}

// BindQueue binds the durable queue consumer on stream that someone
// else created (a bus server): it asks only for its settings, and creates
// or changes nothing. A consumer that does not exist is ErrQueueNotFound.
func (j *JetStream) BindQueue(ctx context.Context, stream, durable string) (*Queue, error) {
	c, err := j.js.Consumer(ctx, stream, durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("consumer %s on %s: %w", durable, stream, ErrQueueNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("consumer %s on %s: %w", durable, stream, noJetStream(err))
	}
	return &Queue{c: c}, nil
}

// ErrQueueNotFound is a queue consumer that does not exist.
var ErrQueueNotFound = errors.New("no such consumer")

// AckWait is the queue's lease, as the server said when it was bound.
func (q *Queue) AckWait() time.Duration { return q.c.CachedInfo().Config.AckWait }

// Next waits for one message until ctx ends; a wait that ran out with
// nothing to deliver matches context.DeadlineExceeded.
func (q *Queue) Next(ctx context.Context) (*Delivery, error) {
	m, err := q.c.Next(jetstream.FetchContext(ctx))
	if errors.Is(err, nats.ErrTimeout) {
		return nil, fmt.Errorf("next message: %w (%w)", context.DeadlineExceeded, err)
	}
	if err != nil {
		return nil, fmt.Errorf("next message: %w", err)
	}
	return &Delivery{m: m}, nil
}

// Delivery is one message handed out by a Queue, to settle once: Ack,
// Nak (deliver again) or Term (never again); InProgress keeps its lease.
type Delivery struct {
	m jetstream.Msg
}

// Data is the message's body.
func (d *Delivery) Data() []byte { return d.m.Data() }

// Attempt is how many times this message was delivered, this one
// included (1 the first time).
func (d *Delivery) Attempt() (int, error) {
	meta, err := d.m.Metadata()
	if err != nil {
		return 0, fmt.Errorf("delivery metadata: %w", err)
	}
	return int(meta.NumDelivered), nil
}

// Ack settles the message as done and waits until the server has it.
func (d *Delivery) Ack(ctx context.Context) error { return d.m.DoubleAck(ctx) }

// Nak hands the message back for delivery again.
func (d *Delivery) Nak() error { return d.m.Nak() }

// InProgress restarts the message's lease.
func (d *Delivery) InProgress() error { return d.m.InProgress() }

// Term settles the message as never to be delivered again, saying why.
func (d *Delivery) Term(reason string) error { return d.m.TermWithReason(reason) }

// Following is a live Follow.
type Following struct {
	cc jetstream.ConsumeContext
}

// Stop ends it: no handler call starts after it returns.
func (f *Following) Stop() {
	if f != nil && f.cc != nil {
		f.cc.Stop()
	}
}

// Follow hands fn, in stream order, every message of stream on subjects
// stored since start, then each new one as it is stored. It is an ordered
// consumer: it resumes where it was after a reconnect.
func (j *JetStream) Follow(ctx context.Context, stream string, subjects []string, since time.Time, fn func(Raw)) (*Following, error) {
	return j.follow(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: subjects,
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
		OptStartTime:   &since,
	}, fn)
}

// FollowFrom is Follow from the stream's sequence start on: by the
// server's count, not its clock, so nothing stored after a LastSeq read
// is missed however the clocks differ.
func (j *JetStream) FollowFrom(ctx context.Context, stream string, subjects []string, start uint64, fn func(Raw)) (*Following, error) {
	return j.follow(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: subjects,
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    max(start, 1),
	}, fn)
}

func (j *JetStream) follow(ctx context.Context, stream string, cfg jetstream.OrderedConsumerConfig, fn func(Raw)) (*Following, error) {
	cons, err := j.js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", stream, noJetStream(err))
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		h := m.Headers()
		fn(Raw{Subject: m.Subject(), Value: m.Data(), Trace: headerTrace(h), Header: Header(h)})
	})
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", stream, err)
	}
	return &Following{cc: cc}, nil
}

// ReadAll returns every message stream holds on subjects, in stream
// order, as of the call (what is stored meanwhile may be left out).
func (j *JetStream) ReadAll(ctx context.Context, stream string, subjects []string) ([]Raw, error) {
	cons, err := j.js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: subjects, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", stream, noJetStream(err))
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", stream, noJetStream(err))
	}
	pending := info.NumPending
	var out []Raw
	for pending > 0 {
		batch, err := cons.Fetch(int(min(pending, 256)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return out, fmt.Errorf("read %s: %w", stream, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			h := m.Headers()
			out = append(out, Raw{Subject: m.Subject(), Value: m.Data(), Trace: headerTrace(h), Header: Header(h)})
			if md, err := m.Metadata(); err == nil {
				pending = md.NumPending
			}
		}
		if err := batch.Error(); err != nil {
			return out, fmt.Errorf("read %s: %w", stream, err)
		}
		if n == 0 {
			break
		}
	}
	return out, nil
}

// ServiceConfig is a service announced on the bus (the NATS service
// protocol: PING, INFO and STATS answered by every instance).
type ServiceConfig struct {
	Name, Version, Description string
	Metadata                   map[string]string
	// Stats is what the instance reports as its endpoints' data in STATS
	// (and answers on StatusSubject).
	Stats func() any
	// StatusSubject, when set, answers a request there with Stats() as
	// JSON.
	StatusSubject string
}

// Service is one registered instance.
type Service struct {
	svc micro.Service
}

// Stop withdraws the instance.
func (s *Service) Stop() error {
	if s == nil || s.svc == nil {
		return nil
	}
	return s.svc.Stop()
}

// AddService registers an instance of cfg on the bus.
func (b *Bus) AddService(ctx context.Context, cfg ServiceConfig) (*Service, error) {
	conn, err := b.Connect(ctx)
	if err != nil {
		return nil, err
	}
	svc, err := micro.AddService(conn, micro.Config{
		Name: cfg.Name, Version: cfg.Version, Description: cfg.Description, Metadata: cfg.Metadata,
		StatsHandler: func(*micro.Endpoint) any { return cfg.Stats() },
	})
	if err != nil {
		return nil, fmt.Errorf("register service %s: %w", cfg.Name, err)
	}
	if cfg.StatusSubject != "" {
		// The instance's id and start are fixed at registration; read
		// here, not in the handler, which runs under micro's own lock.
		id, started := svc.Info().ID, svc.Stats().Started
		status := func(r micro.Request) {
			data, err := json.Marshal(cfg.Stats())
			if err != nil {
				_ = r.Error("500", "status: "+err.Error(), nil)
				return
			}
			_ = r.RespondJSON(InstanceStats{ID: id, Started: started, Data: data})
		}
		if err := svc.AddEndpoint("status", micro.HandlerFunc(status),
			micro.WithEndpointSubject(cfg.StatusSubject)); err != nil {
			_ = svc.Stop()
			return nil, fmt.Errorf("register service %s: status endpoint: %w", cfg.Name, err)
		}
	}
	return &Service{svc: svc}, nil
}

// InstanceStats is one instance's answer to STATS, and what its status
// endpoint answers.
type InstanceStats struct {
	ID      string    `json:"id"`
	Started time.Time `json:"started"`
	// Data is the first endpoint's Stats() as JSON.
	Data json.RawMessage `json:"data"`
}

// AskInstance asks one instance's status endpoint (ServiceConfig's
// StatusSubject) for its InstanceStats, waiting at most wait. Unlike
// STATS, which every instance of a service hears and any of them may
// answer as it likes, a subject that the server lets only one identity
// subscribe to is answered by that identity alone.
func (b *Bus) AskInstance(ctx context.Context, subject string, wait time.Duration) (InstanceStats, error) {
	conn, err := b.Connect(ctx)
	if err != nil {
		return InstanceStats{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	m, err := conn.RequestWithContext(rctx, subject, nil)
	if err != nil {
		return InstanceStats{}, fmt.Errorf("ask %s: %w", subject, err)
	}
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		return InstanceStats{}, fmt.Errorf("ask %s: %s %s", subject, code, m.Header.Get(micro.ErrorHeader))
	}
	var st InstanceStats
	if err := json.Unmarshal(m.Data, &st); err != nil {
		return InstanceStats{}, fmt.Errorf("ask %s: the answer is not a status: %w", subject, err)
	}
	return st, nil
}

// ServiceStats asks every instance of the service name for its STATS and
// collects the answers that arrive within wait (or until ctx ends).
func (b *Bus) ServiceStats(ctx context.Context, name string, wait time.Duration) ([]InstanceStats, error) {
	conn, err := b.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inbox := conn.NewRespInbox()
	replies := make(chan *nats.Msg, 256)
	sub, err := conn.ChanSubscribe(inbox, replies)
	if err != nil {
		return nil, fmt.Errorf("ask %s for stats: %w", name, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	subject, err := micro.ControlSubject(micro.StatsVerb, name, "")
	if err != nil {
		return nil, fmt.Errorf("ask %s for stats: %w", name, err)
	}
	if err := conn.PublishRequest(subject, inbox, nil); err != nil {
		return nil, fmt.Errorf("ask %s for stats: %w", name, err)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var out []InstanceStats
	for {
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-timer.C:
			return out, nil
		case m := <-replies:
			var st micro.Stats
			if err := json.Unmarshal(m.Data, &st); err != nil || st.Name != name || len(st.Endpoints) == 0 {
				continue
			}
			out = append(out, InstanceStats{ID: st.ID, Started: st.Started, Data: st.Endpoints[0].Data})
		}
	}
}
