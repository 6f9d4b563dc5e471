#include <vector>

namespace ds {

class Stack {
public:
    void push(int v);
    int size() const { return static_cast<int>(items_.size()); }
private:
    std::vector<int> items_;
};

void Stack::push(int v) {
    items_.push_back(v);
}

}  // namespace ds
