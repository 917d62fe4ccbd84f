package search

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"
)

//go:embed es_mapping.json
var esMapping []byte

// ESMapping returns the index settings and mappings of the Elasticsearch
// engine (testdata/es_mapping.golden).
func ESMapping() []byte { return esMapping }

// Elastic is the Elasticsearch engine. Queries and writes go through the
// alias; `ticketing reindex` builds a new index and swaps the alias.
type Elastic struct {
	es    *elasticsearch.Client
	alias string
}

// OpenElastic connects to url and makes sure the alias points at an index
// (created with the embedded mapping if missing; fresh is then true).
func OpenElastic(ctx context.Context, url, alias string) (e *Elastic, fresh bool, err error) {
	es, err := elasticsearch.NewClient(elasticsearch.Config{
		Addresses:  []string{url},
		Transport:  &http.Transport{ResponseHeaderTimeout: 5 * time.Second, MaxIdleConnsPerHost: 32},
		MaxRetries: 1,
	})
	if err != nil {
		return nil, false, fmt.Errorf("search: ELASTICSEARCH_URL: %w", err)
	}
	e = &Elastic{es: es, alias: alias}
	res, err := es.Indices.ExistsAlias([]string{alias}, es.Indices.ExistsAlias.WithContext(ctx))
	if err != nil {
		return nil, false, fmt.Errorf("search: elasticsearch: %w", err)
	}
	res.Body.Close()
	if res.StatusCode == http.StatusOK {
		return e, false, nil
	}
	name, err := e.createIndex(ctx)
	if err != nil {
		return nil, false, err
	}
	return e, true, e.swapAlias(ctx, name)
}

func (e *Elastic) do(ctx context.Context, req esapi.Request, out any) error {
	res, err := req.Do(ctx, e.es)
	if err != nil {
		return fmt.Errorf("search: elasticsearch: %w", err)
	}
	defer res.Body.Close()
	if res.IsError() {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 2048))
		return fmt.Errorf("search: elasticsearch: %s: %s", res.Status(), b)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		return nil
	}
	return json.NewDecoder(res.Body).Decode(out)
}

func (e *Elastic) createIndex(ctx context.Context) (string, error) {
	name := fmt.Sprintf("%s-%d", e.alias, time.Now().UnixNano())
	err := e.do(ctx, esapi.IndicesCreateRequest{Index: name, Body: bytes.NewReader(esMapping)}, nil)
	return name, err
}

// swapAlias points the alias at index alone (atomically) and deletes the
// indices it pointed at before.
func (e *Elastic) swapAlias(ctx context.Context, index string) error {
	var current map[string]any
	_ = e.do(ctx, esapi.IndicesGetAliasRequest{Name: []string{e.alias}}, &current)
	actions := []any{map[string]any{"add": map[string]any{"index": index, "alias": e.alias}}}
	var old []string
	for name := range current {
		if name != index {
			old = append(old, name)
			actions = append(actions, map[string]any{"remove": map[string]any{"index": name, "alias": e.alias}})
		}
	}
	body, _ := json.Marshal(map[string]any{"actions": actions})
	if err := e.do(ctx, esapi.IndicesUpdateAliasesRequest{Body: bytes.NewReader(body)}, nil); err != nil {
		return err
	}
	if len(old) > 0 {
		return e.do(ctx, esapi.IndicesDeleteRequest{Index: old}, nil)
	}
	return nil
}

// esSource is the stored document.
func esSource(d Document) map[string]any {
	return map[string]any{
		"id": d.ID, "name": d.Name, "description": d.Description, "artists": d.Artists,
		"venue": d.Venue, "city": d.City, "category": d.Category, "country": d.Country,
		"location": map[string]float64{"lat": d.Lat, "lon": d.Lon}, "lat": d.Lat, "lon": d.Lon,
		"startsAt": d.StartsAt.UTC().Format(time.RFC3339Nano),
		"minPrice": d.MinPrice, "maxPrice": d.MaxPrice,
		"currency": d.Currency, "version": d.Version,
	}
}

// BulkBody is the NDJSON of indexing docs into index with external
// versioning (version_type=external_gte: an equal version is written again,
// the same document from a replay or another instance; an older one is
// rejected).
func BulkBody(index string, docs []Document) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, d := range docs {
		_ = enc.Encode(map[string]any{"index": map[string]any{
			"_index": index, "_id": d.ID, "version": d.Version, "version_type": "external_gte"}})
		_ = enc.Encode(esSource(d))
	}
	return buf.Bytes()
}

func (e *Elastic) bulk(ctx context.Context, index string, body []byte) error {
	var res struct {
		Errors bool `json:"errors"`
		Items  []map[string]struct {
			Status int             `json:"status"`
			Error  json.RawMessage `json:"error"`
		} `json:"items"`
	}
	if err := e.do(ctx, esapi.BulkRequest{Body: bytes.NewReader(body)}, &res); err != nil {
		return err
	}
	if !res.Errors {
		return nil
	}
	for _, item := range res.Items {
		for _, r := range item {
			// 409: a newer version is indexed already; 404: delete of a missing doc.
			if r.Status >= 300 && r.Status != http.StatusConflict && r.Status != http.StatusNotFound {
				return fmt.Errorf("search: elasticsearch bulk: %d %s", r.Status, r.Error)
			}
		}
	}
	return nil
}

// Index upserts docs by external version.
func (e *Elastic) Index(ctx context.Context, docs []Document) error {
	if len(docs) == 0 {
		return nil
	}
	return e.bulk(ctx, e.alias, BulkBody(e.alias, docs))
}

// Delete removes documents by id.
func (e *Elastic) Delete(ctx context.Context, ids []string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, id := range ids {
		_ = enc.Encode(map[string]any{"delete": map[string]any{"_index": e.alias, "_id": id}})
	}
	if buf.Len() == 0 {
		return nil
	}
	return e.bulk(ctx, e.alias, buf.Bytes())
}

// Count returns the number of documents behind the alias.
func (e *Elastic) Count(ctx context.Context) (uint64, error) {
	var res struct {
		Count uint64 `json:"count"`
	}
	err := e.do(ctx, esapi.CountRequest{Index: []string{e.alias}}, &res)
	return res.Count, err
}

// Close releases nothing (HTTP client).
func (e *Elastic) Close() error { return nil }

// Versions reads the version of every document (paged by id).
func (e *Elastic) Versions(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	var after []any
	for {
		body := map[string]any{"size": 10000, "_source": []string{"version"}, "sort": []any{map[string]string{"id": "asc"}},
			"query": map[string]any{"match_all": map[string]any{}}}
		if after != nil {
			body["search_after"] = after
		}
		res, err := e.search(ctx, body)
		if err != nil {
			return nil, err
		}
		for _, h := range res.Hits.Hits {
			out[h.ID] = h.Source.Version
		}
		if len(res.Hits.Hits) < 10000 {
			return out, nil
		}
		after = res.Hits.Hits[len(res.Hits.Hits)-1].Sort
	}
}

type esResult struct {
	Hits struct {
		Total struct {
			Value int `json:"value"`
		} `json:"total"`
		Hits []struct {
			ID     string  `json:"_id"`
			Score  float64 `json:"_score"`
			Sort   []any   `json:"sort"`
			Source struct {
				Lat     float64 `json:"lat"`
				Lon     float64 `json:"lon"`
				Version int64   `json:"version"`
			} `json:"_source"`
		} `json:"hits"`
	} `json:"hits"`
	Aggregations map[string]struct {
		Buckets []struct {
			Key      string `json:"key"`
			DocCount int    `json:"doc_count"`
		} `json:"buckets"`
	} `json:"aggregations"`
}

func (e *Elastic) search(ctx context.Context, body map[string]any) (esResult, error) {
	var res esResult
	b, err := json.Marshal(body)
	if err != nil {
		return res, err
	}
	err = e.do(ctx, esapi.SearchRequest{Index: []string{e.alias}, Body: bytes.NewReader(b)}, &res)
	return res, err
}

// SearchBody is the Elasticsearch request body of a normalised query
// (testdata/es_query_*.golden).
func SearchBody(q Query) (map[string]any, error) {
	var must, filter []any
	if q.Text != "" {
		must = append(must, map[string]any{"bool": map[string]any{
			"should": []any{
				map[string]any{"multi_match": map[string]any{
					"query": q.Text, "operator": "and", "type": "cross_fields",
					"fields": []string{fmt.Sprintf("name^%g", boostName), fmt.Sprintf("artists^%g", boostArtists),
						fmt.Sprintf("city^%g", boostCity), fmt.Sprintf("venue^%g", boostVenue), fmt.Sprintf("description^%g", boostDescription)}}},
				map[string]any{"multi_match": map[string]any{
					"query": q.Text, "operator": "and", "fuzziness": "AUTO", "prefix_length": 1, "boost": boostFuzzy,
					"fields": []string{fmt.Sprintf("name^%g", boostName), fmt.Sprintf("artists^%g", boostArtists),
						fmt.Sprintf("city^%g", boostCity), fmt.Sprintf("venue^%g", boostVenue), fmt.Sprintf("description^%g", boostDescription)}}},
				map[string]any{"multi_match": map[string]any{
					"query": q.Text, "operator": "and", "boost": boostStem,
					"fields": []string{"name.es", "name.en", "description.es", "description.en"}}},
			},
			"minimum_should_match": 1,
		}})
	}
	rng := map[string]any{}
	if !q.From.IsZero() {
		rng["gte"] = q.From.UTC().Format(time.RFC3339Nano)
	}
	if !q.To.IsZero() {
		rng["lt"] = q.To.UTC().Format(time.RFC3339Nano)
	}
	if len(rng) > 0 {
		filter = append(filter, map[string]any{"range": map[string]any{"startsAt": rng}})
	}
	if q.City != "" {
		filter = append(filter, map[string]any{"term": map[string]any{"city.key": q.City}})
	}
	if len(q.Categories) > 0 {
		filter = append(filter, map[string]any{"terms": map[string]any{"category.key": q.Categories}})
	}
	if q.Near != nil {
		filter = append(filter, map[string]any{"geo_distance": map[string]any{
			"distance": fmt.Sprintf("%gkm", q.RadiusKm), "location": map[string]float64{"lat": q.Near.Lat, "lon": q.Near.Lon}}})
	}
	var sort []any
	switch q.Sort {
	case SortRelevance:
		sort = []any{map[string]string{"_score": "desc"}, map[string]string{"id": "asc"}}
	case SortDistance:
		sort = []any{map[string]any{"_geo_distance": map[string]any{
			"location": map[string]float64{"lat": q.Near.Lat, "lon": q.Near.Lon}, "order": "asc", "unit": "km"}},
			map[string]string{"id": "asc"}}
	default:
		sort = []any{map[string]string{"startsAt": "asc"}, map[string]string{"id": "asc"}}
	}
	body := map[string]any{
		"size":             q.First + 1,
		"track_total_hits": true,
		"_source":          []string{"lat", "lon"},
		"query":            map[string]any{"bool": map[string]any{"must": orMatchAll(must), "filter": filter}},
		"sort":             sort,
	}
	if q.After != "" {
		key, err := decodeCursor(q.After, q.Sort, len(sort))
		if err != nil {
			return nil, err
		}
		body["search_after"] = key
	}
	if q.Facets {
		body["aggs"] = map[string]any{
			"categories": map[string]any{"terms": map[string]any{"field": "category", "size": 50}},
			"cities":     map[string]any{"terms": map[string]any{"field": "city.raw", "size": 50}},
		}
	}
	return body, nil
}

func orMatchAll(must []any) []any {
	if len(must) == 0 {
		return []any{map[string]any{"match_all": map[string]any{}}}
	}
	return must
}

// Search answers a normalised query.
func (e *Elastic) Search(ctx context.Context, q Query) (Result, error) {
	body, err := SearchBody(q)
	if err != nil {
		return Result{}, err
	}
	res, err := e.search(ctx, body)
	if err != nil {
		return Result{}, err
	}
	out := Result{Total: res.Hits.Total.Value}
	hits := res.Hits.Hits
	if len(hits) > q.First {
		hits, out.HasNext = hits[:q.First], true
	}
	for _, h := range hits {
		hit := Hit{ID: h.ID, Cursor: encodeCursor(q.Sort, h.Sort)}
		if q.Near != nil {
			d := DistanceKm(*q.Near, GeoPoint{Lat: h.Source.Lat, Lon: h.Source.Lon})
			hit.DistanceKm = &d
		}
		out.Hits = append(out.Hits, hit)
	}
	if q.Facets {
		out.FacetsShown = true
		for name, dst := range map[string]*[]FacetCount{"categories": &out.Categories, "cities": &out.Cities} {
			*dst = []FacetCount{}
			for _, b := range res.Aggregations[name].Buckets {
				*dst = append(*dst, FacetCount{Value: b.Key, Count: b.DocCount})
			}
		}
	}
	return out, nil
}

// Rebuild indexes the feed into a new index and then points the alias at
// it, so searches keep being answered by the old index until the swap.
func (e *Elastic) Rebuild(ctx context.Context, feed func(yield func([]Document) error) error) error {
	name, err := e.createIndex(ctx)
	if err != nil {
		return err
	}
	err = feed(func(docs []Document) error { return e.bulk(ctx, name, BulkBody(name, docs)) })
	if err == nil {
		err = e.do(ctx, esapi.IndicesRefreshRequest{Index: []string{name}}, nil)
	}
	if err != nil {
		_ = e.do(context.WithoutCancel(ctx), esapi.IndicesDeleteRequest{Index: []string{name}}, nil)
		return err
	}
	return e.swapAlias(ctx, name)
}

// DeleteAll deletes the indices behind the alias (tests).
func (e *Elastic) DeleteAll(ctx context.Context) error {
	var current map[string]any
	if err := e.do(ctx, esapi.IndicesGetAliasRequest{Name: []string{e.alias}}, &current); err != nil {
		return err
	}
	var names []string
	for n := range current {
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil
	}
	return e.do(ctx, esapi.IndicesDeleteRequest{Index: names}, nil)
}
