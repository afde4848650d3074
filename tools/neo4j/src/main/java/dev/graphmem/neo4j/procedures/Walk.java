package dev.graphmem.neo4j.procedures;

import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Stream;

import org.neo4j.graphdb.Direction;
import org.neo4j.graphdb.Entity;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.RelationshipType;
import org.neo4j.graphdb.ResourceIterable;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;

/**
 * The graph walk of a graphmem search, run on the server.
 *
 * <p>It is the walk of {@code graphmem/stores/walk.py} (the statement of what a search reaches and
 * cuts) from the point where the query's entities are linked, and the Cypher walk of
 * {@code graphmem/stores/neo4j/cypher/search.py} step for step: Cypher spends most of a hybrid
 * search's server time interpreting that walk row by row, this reads the same nodes through the
 * core API. graphmem uses it when the server has it (the launcher registers it; other servers load
 * the plugin jar), and {@code tests/test_search_parity.py} holds both answers equal to the oracle.
 */
public final class Walk {

    private static final RelationshipType MENTIONS = RelationshipType.withName("MENTIONS");
    private static final Label MEMORY = Label.label("Memory");
    private static final Label ENTITY = Label.label("Entity");
    private static final Label VALUE = Label.label("Value");

    @Context
    public Transaction tx;

    /** One row: the walk's seed mentions, reached entities, facts, and the memories to read. */
    public static final class Result {
        /** {@code [memory id, entity id]} per entity a seed memory mentions. */
        public List<List<String>> seedPairs;
        /** Per reached entity: {@code e} (the node), {@code deg} (its mentions), {@code mids} (the first of them). */
        public List<Map<String, Object>> entities;
        /** Per fact with both ends reached: {@code r}, {@code s}, {@code o} and {@code prov} (the first memory ids). */
        public List<Map<String, Object>> facts;
        /** The memories the result names (mentions, provenance, seed pairs) that are not in {@code skip}. */
        public List<Node> memories;
    }

    @Procedure(name = "graphmem.walk", mode = Mode.READ)
    @Description("graphmem's search walk from linked entities and seed memories (see graphmem/stores/walk.py)")
    public Stream<Result> walk(
            @Name("seeds") List<String> seeds,
            @Name("linked") List<Node> linked,
            @Name("skip") List<String> skip,
            @Name("scope") Map<String, Object> scope,
            @Name("asOf") ZonedDateTime asOf,
            @Name("depth") long depth,
            @Name("maxFrontier") long maxFrontier,
            @Name("maxFacts") long maxFacts,
            @Name("maxMentions") long maxMentions,
            @Name("hubDegree") long hubDegree) {
        State st = new State(scope, asOf);
        Result out = new Result();

        // Seed memories' entities in scope (each pair is a mention of the result).
        out.seedPairs = new ArrayList<>();
        Set<Node> seedEntities = new LinkedHashSet<>();
        for (String mid : new LinkedHashSet<>(seeds)) {
            Node m = tx.findNode(MEMORY, "id", mid);
            if (m == null) {
                continue;
            }
            try (ResourceIterable<Relationship> rels = m.getRelationships(Direction.OUTGOING, MENTIONS)) {
                for (Relationship r : rels) {
                    Node e = r.getEndNode();
                    if (e.hasLabel(ENTITY) && st.inScope(e)) {
                        out.seedPairs.add(List.of(mid, id(e)));
                        seedEntities.add(e);
                    }
                }
            }
        }

        // First frontier: the linked entities in key order, then the seeded ones, least mentioned first.
        List<Node> seen = new ArrayList<>(linked);
        Set<Node> seenSet = new HashSet<>(linked);
        List<Node> rest = new ArrayList<>();
        for (Node e : seedEntities) {
            if (!seenSet.contains(e)) {
                rest.add(e);
            }
        }
        rest.sort(st.byDegreeThenId());
        seen.addAll(rest);
        seenSet.addAll(rest);
        List<Node> frontier = new ArrayList<>(seen.subList(0, (int) Math.min(maxFrontier, seen.size())));

        Map<Relationship, Node[]> facts = new LinkedHashMap<>();
        for (long hop = 0; hop < depth; hop++) {
            // Per frontier entity that is not a hub, its first maxFacts facts by id, either direction.
            Map<Relationship, Node[]> found = new LinkedHashMap<>();
            for (Node e : frontier) {
                if (st.degree(e) > hubDegree) {
                    continue;
                }
                Set<Relationship> ownSet = new LinkedHashSet<>(); // a loop may come twice
                try (ResourceIterable<Relationship> rels = e.getRelationships(Direction.BOTH)) {
                    for (Relationship r : rels) {
                        if (r.isType(MENTIONS) || !st.valid(r) || !st.inScope(r)) {
                            continue;
                        }
                        Node s = r.getStartNode();
                        Node o = r.getEndNode();
                        boolean out1 = s.equals(e) && (o.hasLabel(ENTITY) || o.hasLabel(VALUE));
                        boolean in1 = o.equals(e) && s.hasLabel(ENTITY);
                        if (out1 || in1) {
                            ownSet.add(r);
                        }
                    }
                }
                List<Relationship> own = new ArrayList<>(ownSet);
                own.sort(Comparator.comparing(Walk::id));
                for (Relationship r : own.subList(0, (int) Math.min(maxFacts, own.size()))) {
                    found.putIfAbsent(r, new Node[] {r.getStartNode(), r.getEndNode()});
                }
            }
            // Their unseen ends in scope, least mentioned first, cut to maxFrontier: the next frontier.
            Set<Node> ends = new LinkedHashSet<>();
            for (Node[] so : found.values()) {
                for (Node x : so) {
                    if (x.hasLabel(ENTITY) && !seenSet.contains(x) && st.inScope(x)) {
                        ends.add(x);
                    }
                }
            }
            List<Node> fresh = new ArrayList<>(ends);
            fresh.sort(st.byDegreeThenId());
            fresh = new ArrayList<>(fresh.subList(0, (int) Math.min(maxFrontier, fresh.size())));
            seen.addAll(fresh);
            seenSet.addAll(fresh);
            frontier = fresh;
            found.forEach(facts::putIfAbsent);
        }

        // Facts whose ends were both reached (a literal's subject alone), with their first supporting memories.
        Set<String> wantedIds = new LinkedHashSet<>();
        out.facts = new ArrayList<>();
        List<Relationship> kept = new ArrayList<>();
        for (Map.Entry<Relationship, Node[]> f : facts.entrySet()) {
            Node s = f.getValue()[0];
            Node o = f.getValue()[1];
            if (seenSet.contains(s) && (o.hasLabel(VALUE) || seenSet.contains(o))) {
                kept.add(f.getKey());
            }
        }
        kept.sort(Comparator.comparing(Walk::id));
        for (Relationship r : kept) {
            List<String> prov = firstIds(r.getProperty("memory_ids", null), maxMentions);
            wantedIds.addAll(prov);
            Map<String, Object> row = new HashMap<>();
            row.put("r", r);
            row.put("s", r.getStartNode());
            row.put("o", r.getEndNode());
            row.put("prov", prov);
            out.facts.add(row);
        }

        // Per reached entity: its degree and, unless it is a hub, its first memories by id.
        out.entities = new ArrayList<>();
        Map<String, Node> memories = new LinkedHashMap<>();
        for (Node e : seen) {
            long deg = st.degree(e);
            List<Node> ms = new ArrayList<>();
            if (deg <= hubDegree) {
                try (ResourceIterable<Relationship> rels = e.getRelationships(Direction.INCOMING, MENTIONS)) {
                    for (Relationship r : rels) {
                        ms.add(r.getStartNode());
                    }
                }
                ms.sort(Comparator.comparing(Walk::id));
                ms = ms.subList(0, (int) Math.min(maxMentions, ms.size()));
            }
            List<String> mids = new ArrayList<>(ms.size());
            for (Node m : ms) {
                String mid = id(m);
                mids.add(mid);
                memories.putIfAbsent(mid, m);
            }
            Map<String, Object> row = new HashMap<>();
            row.put("e", e);
            row.put("deg", deg);
            row.put("mids", mids);
            out.entities.add(row);
        }

        // The memories of the result not known to the caller: mentions as reached, the others by id.
        for (List<String> pair : out.seedPairs) {
            wantedIds.add(pair.get(0));
        }
        Set<String> known = new HashSet<>(skip);
        for (String mid : wantedIds) {
            if (!memories.containsKey(mid) && !known.contains(mid)) {
                Node m = tx.findNode(MEMORY, "id", mid);
                if (m != null) {
                    memories.put(mid, m);
                }
            }
        }
        out.memories = new ArrayList<>();
        for (Map.Entry<String, Node> m : memories.entrySet()) {
            if (!known.contains(m.getKey())) {
                out.memories.add(m.getValue());
            }
        }
        return Stream.of(out);
    }

    private static String id(Entity x) {
        return (String) x.getProperty("id", null);
    }

    private static List<String> firstIds(Object stored, long limit) {
        if (!(stored instanceof String[] ids)) {
            return List.of();
        }
        String[] sorted = Arrays.stream(ids).filter(Objects::nonNull).sorted().toArray(String[]::new);
        return List.of(Arrays.copyOf(sorted, (int) Math.min(limit, sorted.length)));
    }

    /** The scope, the time a fact must hold at, and entity degrees read once. */
    private static final class State {
        private final Map<String, Object> scope;
        private final ZonedDateTime asOf;
        private final Map<Node, Long> degrees = new HashMap<>();

        State(Map<String, Object> scope, ZonedDateTime asOf) {
            this.scope = scope;
            this.asOf = asOf;
        }

        boolean inScope(Entity x) {
            for (Map.Entry<String, Object> field : scope.entrySet()) {
                if (!field.getValue().equals(x.getProperty(field.getKey(), null))) {
                    return false;
                }
            }
            return true;
        }

        /** Open now ({@code valid_to} unset), or holding at {@code asOf}. */
        boolean valid(Relationship r) {
            Object to = r.getProperty("valid_to", null);
            if (asOf == null) {
                return to == null;
            }
            Object from = r.getProperty("valid_from", null);
            boolean started = from == null || !((ZonedDateTime) from).toInstant().isAfter(asOf.toInstant());
            boolean open = to == null || ((ZonedDateTime) to).toInstant().isAfter(asOf.toInstant());
            return started && open;
        }

        /** Mentions of an entity (only memories mention): a degree read, no relationship loaded. */
        long degree(Node e) {
            return degrees.computeIfAbsent(e, n -> (long) n.getDegree(MENTIONS, Direction.INCOMING));
        }

        Comparator<Node> byDegreeThenId() {
            return Comparator.comparingLong(this::degree).thenComparing(Walk::id);
        }
    }
}
