// Package events names the real-time topics and the publisher interface that
// areas use to announce changes (new GPS points, trip status changes, audit
// events). The real-time channel (internal/realtime) implements Publisher and
// fans events out to WebSocket subscribers, across instances through Redis.
package events

import "context"

// Publisher delivers an event to the subscribers of a topic. It never blocks
// on slow subscribers.
type Publisher interface {
	Publish(ctx context.Context, topic string, payload any)
}

// GPSDevice is the topic of a device's new GPS points (DECISIONS.md, Operational data).
func GPSDevice(deviceID string) string { return "gps.device." + deviceID }

// Trip is the topic of a trip's status changes.
func Trip(tripID string) string { return "trips." + tripID }

// AuditUser is the per-user topic of a user's own audit events, as routed internally.
func AuditUser(userID string) string { return "audit.user." + userID }

// Publish sends through p when the real-time channel is wired (p may be nil in
// tools that run without it).
func Publish(ctx context.Context, p Publisher, topic string, payload any) {
	if p != nil {
		p.Publish(ctx, topic, payload)
	}
}
