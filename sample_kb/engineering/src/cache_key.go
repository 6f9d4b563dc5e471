// Package cachekey derives prompt-cache keys for Kestrel Gateway.
//
// Design: engineering/design/prompt_caching.md (owner: Ines Moreau, Caching team).
// Code owner: Arjun Patel.
//
// A cache key is
//
//	"kc2:" + tenantID + ":" + hex(sha256(canonicalJSON(normalizedRequest)))
//
// The "kc2" prefix is the key version. Bump it whenever the set of hashed fields or the
// normalization changes; old entries are never migrated, they simply expire (max TTL 24 h).
// kc1 -> kc2 (Gateway 4.2, March 2026): the resolved provider model version replaced the
// model alias, because alias updates were serving stale responses.
package cachekey

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// KeyVersion is the current cache key version prefix.
const KeyVersion = "kc2"

// Cache-control header values.
const (
	HeaderCache      = "X-Kestrel-Cache"       // "force" or "bypass"
	HeaderCacheScope = "X-Kestrel-Cache-Scope" // "tenant" (default) or "user"
)

// Default and allowed TTLs, in seconds.
const (
	DefaultTTLSeconds = 3600  // 1 hour
	MinTTLSeconds     = 60    // 1 minute
	MaxTTLSeconds     = 86400 // 24 hours
	MaxEntryBytes     = 2 << 20
)

// ErrNotCacheable is returned when a request must not be served from or written to the cache.
var ErrNotCacheable = errors.New("cachekey: request is not cacheable")

// Message is one chat message after parsing.
type Message struct {
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
}

// Tool is a tool (function) definition offered to the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is the subset of an inbound request that can influence the model output.
type Request struct {
	TenantID       string
	EndUserID      string // from the "user" field or X-Kestrel-End-User
	Provider       string // e.g. "openai"
	ResolvedModel  string // concrete version, e.g. "gpt-4o-2024-08-06", never an alias
	Messages       []Message
	Temperature    *float64
	TopP           *float64
	MaxTokens      *int
	Stop           []string
	Seed           *int64
	Tools          []Tool
	ToolChoice     json.RawMessage
	ResponseFormat json.RawMessage
	Stream         bool              // NOT hashed: streamed and non-streamed share entries
	Metadata       map[string]string // NOT hashed: customer tags for analytics only
	CacheHeader    string            // value of X-Kestrel-Cache
	ScopeHeader    string            // value of X-Kestrel-Cache-Scope
}

// Cacheable reports whether a request may use the cache.
//
// Rules:
//   - "X-Kestrel-Cache: bypass" always disables caching.
//   - "X-Kestrel-Cache: force" always enables it (the customer accepts that a sampled answer
//     will be replayed).
//   - Otherwise, only deterministic requests are cached: temperature must be explicitly 0.
//     A missing temperature means the provider default (usually 1.0), so it is NOT cacheable.
func Cacheable(r *Request) bool {
	switch strings.ToLower(r.CacheHeader) {
	case "bypass":
		return false
	case "force":
		return true
	}
	return r.Temperature != nil && *r.Temperature == 0
}

// canonical is the hashed representation. Field order is fixed by the struct definition and
// encoding/json, so the serialization is stable.
type canonical struct {
	V              string          `json:"v"`
	Provider       string          `json:"provider"`
	Model          string          `json:"model"`
	EndUser        string          `json:"end_user,omitempty"`
	Messages       []Message       `json:"messages"`
	Temperature    *float64        `json:"temperature"`
	TopP           *float64        `json:"top_p"`
	MaxTokens      *int            `json:"max_tokens"`
	Stop           []string        `json:"stop"`
	Seed           *int64          `json:"seed"`
	Tools          []Tool          `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice,omitempty"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
}

// normalizeContent applies the text normalization used by kc2:
// Unicode NFC, CRLF -> LF, and trailing whitespace trimmed from every line.
// Leading whitespace and blank lines are preserved because they can change model output
// (for example in code prompts).
func normalizeContent(s string) string {
	s = norm.NFC.String(s)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Join(lines, "\n")
}

// Key returns the cache key for r, or ErrNotCacheable.
//
// The tenant ID is part of the key *prefix* (not only the hash) so that a tenant's entries
// can be purged with a prefix scan and so that keys from different tenants can never collide,
// even in theory. With X-Kestrel-Cache-Scope: user the end-user ID is also hashed, so entries
// are only reused for the same end user (Gateway 4.6).
func Key(r *Request) (string, error) {
	if !Cacheable(r) {
		return "", ErrNotCacheable
	}
	if r.TenantID == "" || r.ResolvedModel == "" {
		return "", errors.New("cachekey: tenant and resolved model are required")
	}
	c := canonical{
		V:              KeyVersion,
		Provider:       strings.ToLower(r.Provider),
		Model:          r.ResolvedModel,
		Temperature:    r.Temperature,
		TopP:           r.TopP,
		MaxTokens:      r.MaxTokens,
		Stop:           r.Stop,
		Seed:           r.Seed,
		ToolChoice:     r.ToolChoice,
		ResponseFormat: r.ResponseFormat,
	}
	if strings.EqualFold(r.ScopeHeader, "user") {
		c.EndUser = r.EndUserID
	}
	c.Messages = make([]Message, len(r.Messages))
	for i, m := range r.Messages {
		m.Content = normalizeContent(m.Content)
		c.Messages[i] = m
	}
	// Tool order does not change model behaviour for any supported provider, so sort by name
	// to avoid cache misses when SDKs serialize tools in a different order.
	c.Tools = append([]Tool(nil), r.Tools...)
	sort.Slice(c.Tools, func(i, j int) bool { return c.Tools[i].Name < c.Tools[j].Name })

	buf, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf)
	return KeyVersion + ":" + r.TenantID + ":" + hex.EncodeToString(sum[:]), nil
}

// ClampTTL returns a TTL within [MinTTLSeconds, MaxTTLSeconds]; 0 means "use the default".
func ClampTTL(requested int) int {
	switch {
	case requested == 0:
		return DefaultTTLSeconds
	case requested < MinTTLSeconds:
		return MinTTLSeconds
	case requested > MaxTTLSeconds:
		return MaxTTLSeconds
	default:
		return requested
	}
}
