// An intrusive treap (Seidel and Aragon, "Randomized search trees", 1996):
// a binary search tree whose nodes also form a max-heap on a random
// priority, so that its shape is that of a random BST whatever the order of
// insertions. The block allocator keeps its blocks in two of them, by
// address and (per size class) by size; the links live in the blocks, so
// no operation allocates.
//
// Costs, expected: a search is O(log n); insert_after a known node and
// erase of a known node take O(1) rotations (fewer than two on average),
// which is what lets the address index follow every split and merge of the
// allocator without a search.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cachedarrays::detail {

template <typename Node>
struct TreapLinks {
  Node* left = nullptr;
  Node* right = nullptr;
  Node* parent = nullptr;
};

// `Links` names the node's member holding this tree's links; every node
// has a `priority` member (std::uint32_t, random, shared by the trees a
// node is in); `Less` orders nodes (strictly: no two equal nodes).
template <typename Node, TreapLinks<Node> Node::*Links, typename Less>
class Treap {
 public:
  [[nodiscard]] bool empty() const noexcept { return root_ == nullptr; }
  [[nodiscard]] Node* root() const noexcept { return root_; }

  // Inserts `node` at its place by `Less`, searching from the root.
  void insert(Node* node) noexcept {
    reset(node);
    Node* parent = nullptr;
    Node** slot = &root_;
    while (*slot != nullptr) {
      parent = *slot;
      slot = Less{}(*node, *parent) ? &links(parent).left : &links(parent).right;
    }
    *slot = node;
    links(node).parent = parent;
    sift_up(node);
  }

  // Inserts `node` directly after `position` in the order (at the front
  // when `position` is null), without comparing: the caller knows it
  // belongs there.
  void insert_after(Node* position, Node* node) noexcept {
    reset(node);
    if (root_ == nullptr) {
      root_ = node;
      return;
    }
    Node* parent = position == nullptr ? first() : position;
    if (position == nullptr) {
      links(parent).left = node;
    } else if (links(parent).right == nullptr) {
      links(parent).right = node;
    } else {
      parent = leftmost(links(parent).right);
      links(parent).left = node;
    }
    links(node).parent = parent;
    sift_up(node);
  }

  void erase(Node* node) noexcept {
    // Rotate the node down below its children until it has at most one,
    // keeping the heap order, then splice it out.
    while (links(node).left != nullptr && links(node).right != nullptr) {
      rotate_up(links(node).left->priority > links(node).right->priority ? links(node).left : links(node).right);
    }
    Node* child = links(node).left != nullptr ? links(node).left : links(node).right;
    if (child != nullptr) links(child).parent = links(node).parent;
    replace_in_parent(node, child);
    reset(node);
  }

  [[nodiscard]] Node* first() const noexcept { return root_ == nullptr ? nullptr : leftmost(root_); }
  [[nodiscard]] Node* last() const noexcept {
    Node* n = root_;
    while (n != nullptr && links(n).right != nullptr) n = links(n).right;
    return n;
  }

  // The first node (in order) for which `after(node)` holds; `after` must
  // be false for a prefix of the order and true for the rest.
  template <typename Pred>
  [[nodiscard]] Node* first_where(Pred after) const {
    Node* found = nullptr;
    for (Node* n = root_; n != nullptr;) {
      if (after(*n)) {
        found = n;
        n = links(n).left;
      } else {
        n = links(n).right;
      }
    }
    return found;
  }
  // The last node for which `before(node)` holds; `before` must be true for
  // a prefix of the order and false for the rest.
  template <typename Pred>
  [[nodiscard]] Node* last_where(Pred before) const {
    Node* found = nullptr;
    for (Node* n = root_; n != nullptr;) {
      if (before(*n)) {
        found = n;
        n = links(n).right;
      } else {
        n = links(n).left;
      }
    }
    return found;
  }

  // The node after `node` in order, or null.
  [[nodiscard]] static Node* next(const Node* node) noexcept {
    if (links(node).right != nullptr) return leftmost(links(node).right);
    const Node* n = node;
    Node* up = links(n).parent;
    while (up != nullptr && links(up).right == n) {
      n = up;
      up = links(up).parent;
    }
    return up;
  }

  // True when `node` hangs in this tree (follows its parents to the root).
  [[nodiscard]] bool holds(const Node* node) const noexcept {
    const Node* n = node;
    while (links(n).parent != nullptr) n = links(n).parent;
    return n == root_;
  }

  // Checks the links, the order and the heap property; returns the number
  // of nodes, or calls `fail(what)` (which must not return) at the first
  // inconsistency.
  template <typename Fail>
  std::size_t check(Fail&& fail) const {
    if (root_ != nullptr && links(root_).parent != nullptr) fail("the root has a parent");
    std::size_t count = 0;
    const Node* previous = nullptr;
    for (const Node* n = first(); n != nullptr; n = next(n)) {
      ++count;
      if (previous != nullptr && !Less{}(*previous, *n)) fail("nodes out of order");
      for (const Node* child : {links(n).left, links(n).right}) {
        if (child == nullptr) continue;
        if (links(child).parent != n) fail("a child does not name its parent");
        if (child->priority > n->priority) fail("a child outranks its parent");
      }
      previous = n;
    }
    return count;
  }

 private:
  static TreapLinks<Node>& links(Node* n) noexcept { return n->*Links; }
  static const TreapLinks<Node>& links(const Node* n) noexcept { return n->*Links; }
  static void reset(Node* n) noexcept { links(n) = TreapLinks<Node>{}; }
  static Node* leftmost(Node* n) noexcept {
    while (links(n).left != nullptr) n = links(n).left;
    return n;
  }

  void replace_in_parent(Node* node, Node* with) noexcept {
    Node* parent = links(node).parent;
    if (parent == nullptr) {
      root_ = with;
    } else if (links(parent).left == node) {
      links(parent).left = with;
    } else {
      links(parent).right = with;
    }
  }

  // Makes `node` take its parent's place; the parent becomes its child.
  void rotate_up(Node* node) noexcept {
    Node* parent = links(node).parent;
    if (links(parent).left == node) {
      links(parent).left = links(node).right;
      if (links(node).right != nullptr) links(links(node).right).parent = parent;
      links(node).right = parent;
    } else {
      links(parent).right = links(node).left;
      if (links(node).left != nullptr) links(links(node).left).parent = parent;
      links(node).left = parent;
    }
    links(node).parent = links(parent).parent;
    replace_in_parent(parent, node);
    links(parent).parent = node;
  }

  void sift_up(Node* node) noexcept {
    while (links(node).parent != nullptr && links(node).parent->priority < node->priority) rotate_up(node);
  }

  Node* root_ = nullptr;
};

}  // namespace cachedarrays::detail
